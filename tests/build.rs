//! Links the `record_hashing` test program as a fixed-address executable (see its source).

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=record_hashing=-no-pie");
    }
}
