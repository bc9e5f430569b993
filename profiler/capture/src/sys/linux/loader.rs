//! The dynamic loader: which objects are loaded, and its counters of loads and unloads.

use crate::symbolize::LoadedObject;

/// The loader's counters of objects added and removed so far: they change whenever something
/// is loaded or unloaded. Cheap (stops at the first object, allocates nothing), but takes the
/// loader lock: never call it from the handler.
pub fn loader_counters() -> (u64, u64) {
    extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: `data` is the `&mut (u64, u64)` passed below, alive across the call; the
        // loader passes a valid dl_phdr_info of `size` bytes (the counters exist when `size`
        // covers them).
        unsafe {
            if size >= std::mem::size_of::<libc::dl_phdr_info>() {
                *(data as *mut (u64, u64)) = ((*info).dlpi_adds, (*info).dlpi_subs);
            }
        }
        1
    }
    let mut counters = (0u64, 0u64);
    // SAFETY: `first` matches the callback signature and only writes the `(u64, u64)` that
    // `data` points to, which lives across the call.
    unsafe {
        libc::dl_iterate_phdr(
            Some(first),
            &mut counters as *mut (u64, u64) as *mut libc::c_void,
        )
    };
    counters
}

/// The objects currently loaded, and the loader's add/remove counters (which change whenever
/// something is loaded or unloaded). Takes the loader lock: never call it from the handler.
pub fn loaded_objects() -> (Vec<LoadedObject>, (u64, u64)) {
    struct Acc {
        objects: Vec<LoadedObject>,
        counters: (u64, u64),
    }
    extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes the `data` pointer we gave it, an `&mut Acc` that
        // outlives the call, and no one else touches it meanwhile.
        let acc = unsafe { &mut *(data as *mut Acc) };
        // SAFETY: the loader passes a valid dl_phdr_info of `size` bytes for this call.
        let info = unsafe { &*info };
        if size >= std::mem::size_of::<libc::dl_phdr_info>() {
            acc.counters = (info.dlpi_adds, info.dlpi_subs);
        }
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            // SAFETY: a non-null dlpi_name is a NUL-terminated string valid during the call.
            unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }
                .to_string_lossy()
                .into_owned()
        };
        let phdrs = if info.dlpi_phdr.is_null() {
            &[][..]
        } else {
            // SAFETY: dlpi_phdr points to dlpi_phnum program headers valid during the call.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) }
        };
        let bias = info.dlpi_addr;
        let exec = phdrs
            .iter()
            .filter(|p| p.p_type == libc::PT_LOAD && p.p_flags & libc::PF_X != 0)
            .map(|p| bias + p.p_vaddr..bias + p.p_vaddr + p.p_memsz)
            .collect();
        acc.objects.push(LoadedObject { name, bias, exec });
        0
    }
    let mut acc = Acc {
        objects: Vec::new(),
        counters: (0, 0),
    };
    // SAFETY: `each` matches the callback signature and only uses `data` as the `&mut Acc`
    // passed here, which lives across the call.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut acc as *mut Acc as *mut libc::c_void) };
    (acc.objects, acc.counters)
}
