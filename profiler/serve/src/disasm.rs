//! Machine code for the viewer's Assembly view: `GET /<secret>/disasm?session=N&mapping=M&offset=O`
//! answers the instructions of the function that holds file offset `O` of the binary that
//! mapping `M` of session `N` names, as JSON, or a 404 whose one-line body says why not.
//!
//! Nothing from the request reaches the filesystem but through the session: the file read is
//! the one the session's own mapping names (by index), and only when the session was recorded
//! on this machine (its host name is this one's); a file with a build ID other than the one
//! recorded (rebuilt since) is refused, and so are files that are not regular, not ELF, not
//! x86-64 code, or larger than [`MAX_BINARY_BYTES`]. Of the function, at most
//! [`MAX_FUNCTION_BYTES`] are disassembled (the listing says how much was left out). The file is
//! read through `object`'s read cache, a range at a time (the headers, the symbol table, the
//! function's bytes), never whole, on tokio's blocking pool with a time limit
//! ([`DISASM_TIMEOUT`]), opened with `O_NONBLOCK` like the Source view's files. The weights
//! beside the instructions are the wasm module's: this side knows nothing of samples.

use super::reply::{Reply, CACHE_NONE};
use super::source_files::not_found;
use bytes::Bytes;
use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter, Instruction};
use object::{Architecture, Object, ObjectSegment, ObjectSymbol, ReadCache, ReadRef, SymbolKind};
use prof_session::aggregate::thousands;
use prof_session::session::Session;
use serde::Serialize;
use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

/// The most of one function disassembled: 64 KiB (a longer one is shown up to there).
pub const MAX_FUNCTION_BYTES: u64 = 64 << 10;
/// The largest binary read: 4 GiB (its headers, symbols and one function, never the whole).
pub const MAX_BINARY_BYTES: u64 = 4 << 30;
/// How long finding and disassembling a function may take before the request is answered
/// without it (a binary on a hung network file system).
pub const DISASM_TIMEOUT: Duration = Duration::from_secs(10);

/// What a session says of the binaries its addresses lie in: the file and build ID of each of
/// its mappings, or why none of them is read here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Binaries {
    /// Why this session's binaries are not read on this machine, when they are not.
    refused: Option<String>,
    /// Each mapping's file and build ID, by the session's mapping index.
    mappings: Vec<(String, Option<String>)>,
}

impl Default for Binaries {
    fn default() -> Self {
        Binaries {
            refused: Some("the profile names no binaries".to_owned()),
            mappings: Vec::new(),
        }
    }
}

/// This machine's host name, as sessions record it.
fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

impl Binaries {
    /// The binaries of `session`, read here only when it was recorded on this machine.
    pub fn of(session: &Session) -> Binaries {
        Binaries::of_on(session, &this_host())
    }

    /// The binaries of `session`, read only when it was recorded on the machine named `host`.
    fn of_on(session: &Session, host: &str) -> Binaries {
        let recorded = session.meta.hostname.as_str();
        let refused = if session.mappings.is_empty() {
            Some(
                "the profile records no binaries (no mappings: imported from a format without \
                 them, or recorded by an older prof)"
                    .to_owned(),
            )
        } else if recorded.is_empty() {
            Some(
                "the profile does not say which machine recorded it (an import), so its binaries \
                 are not read here"
                    .to_owned(),
            )
        } else if host.is_empty() || recorded != host {
            Some(format!(
                "recorded on {recorded}, not on this machine ({host}): its binaries are not read here"
            ))
        } else {
            None
        };
        Binaries {
            refused,
            mappings: (session.mappings.iter())
                .map(|m| (session.str(m.path).to_owned(), m.build_id.clone()))
                .collect(),
        }
    }
}

/// A disassembly request: which session, which of its mappings, which file offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wanted {
    pub session: usize,
    pub mapping: usize,
    pub offset: u64,
}

/// The request the query string asks for (`session=N&mapping=M&offset=O`, decimal), or why it
/// is not one.
pub(crate) fn requested(query: &str) -> Result<Wanted, String> {
    let value = |key: &str| {
        let found = query.split('&').find_map(|pair| {
            pair.strip_prefix(key)
                .and_then(|rest| rest.strip_prefix('='))
        });
        found
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| format!("no {key}=NUMBER in the request"))
    };
    let index = |key: &str| value(key).and_then(|v| usize::try_from(v).map_err(|e| e.to_string()));
    Ok(Wanted {
        session: index("session")?,
        mapping: index("mapping")?,
        offset: value("offset")?,
    })
}

/// How much may be read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub binary: u64,
    pub function: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            binary: MAX_BINARY_BYTES,
            function: MAX_FUNCTION_BYTES,
        }
    }
}

/// One instruction.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct Line {
    /// Its offset in the file (what the page's weights are keyed by).
    offset: u64,
    /// Its address as the binary links it (what `objdump -d` prints), in hex.
    address: String,
    /// Its bytes, in hex.
    bytes: String,
    /// Its mnemonic and operands (GNU as syntax).
    text: String,
}

/// A function's code.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct Listing {
    /// The binary read.
    binary: String,
    /// Its build ID, when it has one.
    #[serde(rename = "buildId")]
    build_id: Option<String>,
    /// The symbol holding the offset asked for.
    symbol: String,
    /// Its address (hex) and size in bytes.
    address: String,
    size: u64,
    /// How many of its bytes are shown (less than `size` past [`MAX_FUNCTION_BYTES`]).
    shown: u64,
    /// The file offset just past the bytes shown.
    end: u64,
    /// When the function is longer than what is shown, a line saying so.
    cut: Option<String>,
    instructions: Vec<Line>,
}

/// The reply to `wanted`, given the sessions' binaries: the listing as JSON, or a 404 saying
/// why there is none. The file work runs on tokio's blocking pool, within [`DISASM_TIMEOUT`].
pub(crate) async fn reply(binaries: &[Binaries], wanted: Wanted) -> Reply {
    let (path, build_id) = match target(binaries, wanted) {
        Ok(found) => found,
        Err(why) => return not_found(why),
    };
    let work = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            disassemble(&path, build_id.as_deref(), wanted.offset, Limits::default())
        })
    };
    match tokio::time::timeout(DISASM_TIMEOUT, work).await {
        Ok(Ok(Ok(listing))) => match serde_json::to_vec(&listing) {
            Ok(json) => {
                let mut reply = Reply::shared_text(200, Bytes::from(json));
                reply.mime = "application/json";
                reply.cache = Some(CACHE_NONE);
                reply
            }
            Err(e) => not_found(format!("{path}: {e}")),
        },
        Ok(Ok(Err(why))) => not_found(format!("{path}: {why}")),
        Ok(Err(failed)) => not_found(format!("{path}: cannot be read: {failed}")),
        Err(_) => not_found(format!(
            "{path}: could not be read within {} s",
            DISASM_TIMEOUT.as_secs()
        )),
    }
}

/// The file and build ID of the mapping `wanted` names, when its session's binaries are read
/// here.
fn target(binaries: &[Binaries], wanted: Wanted) -> Result<(String, Option<String>), String> {
    let session = binaries
        .get(wanted.session)
        .ok_or_else(|| format!("no profile {}", wanted.session))?;
    if let Some(why) = &session.refused {
        return Err(why.clone());
    }
    session
        .mappings
        .get(wanted.mapping)
        .cloned()
        .ok_or_else(|| format!("the profile has no mapping {}", wanted.mapping))
}

/// Lowercase hex, as `readelf -n` prints build IDs.
fn hex(bytes: &[u8], separator: &str) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    hex.join(separator)
}

/// The function of the binary `path` that holds file offset `offset`, disassembled up to
/// `limits.function` bytes, after the checks above (`build_id`: the one the session recorded).
/// Blocks on the file, so it runs off the server's thread.
pub(crate) fn disassemble(
    path: &str,
    build_id: Option<&str>,
    offset: u64,
    limits: Limits,
) -> Result<Listing, String> {
    if !path.starts_with('/') {
        return Err("not a file the loader named by its path".to_owned());
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "not found on this machine".to_owned(),
            _ => format!("cannot be read: {e}"),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > limits.binary {
        return Err(format!("larger than {} MiB: not read", limits.binary >> 20));
    }
    let cache = ReadCache::<File>::new(file);
    let elf = object::File::parse(&cache).map_err(|e| format!("not an ELF file: {e}"))?;
    if elf.architecture() != Architecture::X86_64 {
        return Err(format!(
            "{:?} code: the Assembly view disassembles x86-64 only",
            elf.architecture()
        ));
    }
    let found = match elf.build_id() {
        Ok(Some(id)) if !id.is_empty() => Some(hex(id, "")),
        _ => None,
    };
    if let Some(recorded) = build_id {
        if found.as_deref() != Some(recorded) {
            return Err(format!(
                "build ID {} here, {recorded} when recorded: the file changed since (rebuilt?), \
                 so its code is not what was sampled",
                found.as_deref().unwrap_or("none")
            ));
        }
    }
    // The loaded segment holding the offset, and the address the offset is linked at.
    let segment = elf
        .segments()
        .find(|s| {
            let (start, size) = s.file_range();
            start <= offset && offset - start < size
        })
        .ok_or_else(|| format!("no loaded segment holds file offset {offset:#x}"))?;
    let (seg_offset, seg_size) = segment.file_range();
    // A malformed file's numbers may overflow: it is refused, never a panic.
    let overflow = || "its segments' numbers overflow: a malformed file".to_owned();
    let address = (segment.address())
        .checked_add(offset - seg_offset)
        .ok_or_else(overflow)?;
    // The smallest function symbol holding the address (the static table, then the dynamic).
    let holds = |s: &object::Symbol<'_, '_, &ReadCache<File>>| {
        s.kind() == SymbolKind::Text
            && s.size() > 0
            && s.address() <= address
            && address - s.address() < s.size()
    };
    let symbol = (elf.symbols().filter(holds).min_by_key(|s| s.size()))
        .or_else(|| elf.dynamic_symbols().filter(holds).min_by_key(|s| s.size()))
        .ok_or_else(|| format!("no function symbol holds address {address:#x}"))?;
    let name = symbol.name().unwrap_or("?").to_owned();
    let (start, size) = (symbol.address(), symbol.size());
    if start < segment.address() {
        return Err(format!("{name} starts before its segment"));
    }
    let start_offset = (seg_offset)
        .checked_add(start - segment.address())
        .ok_or_else(overflow)?;
    let in_segment = (seg_offset.saturating_add(seg_size)).saturating_sub(start_offset);
    let shown = size.min(limits.function).min(in_segment);
    let bytes = cache
        .read_bytes_at(start_offset, shown)
        .map_err(|_| format!("{name}'s bytes cannot be read"))?;
    Ok(Listing {
        binary: path.to_owned(),
        build_id: found,
        symbol: name,
        address: format!("{start:#x}"),
        size,
        shown,
        end: start_offset.saturating_add(shown),
        cut: (shown < size).then(|| {
            format!(
                "Only the first {} of its {} bytes are shown (at most {} KiB of a function are \
                 disassembled).",
                thousands(shown),
                thousands(size),
                limits.function >> 10
            )
        }),
        instructions: decode(bytes, start, start_offset),
    })
}

/// The instructions of `bytes`, linked at `address` and found at file offset `offset`.
fn decode(bytes: &[u8], address: u64, offset: u64) -> Vec<Line> {
    let mut decoder = Decoder::with_ip(64, bytes, address, DecoderOptions::NONE);
    let mut formatter = GasFormatter::new();
    let mut instruction = Instruction::default();
    let mut lines = Vec::new();
    while decoder.can_decode() {
        let at = decoder.position();
        decoder.decode_out(&mut instruction);
        let len = instruction.len().max(1);
        let mut text = String::new();
        if instruction.is_invalid() {
            text.push_str("(bad)");
        } else {
            formatter.format(&instruction, &mut text);
        }
        lines.push(Line {
            offset: offset.saturating_add(at as u64),
            address: format!("{:#x}", instruction.ip()),
            bytes: hex(&bytes[at..(at + len).min(bytes.len())], " "),
            text,
        });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::session::{MappingSpec, Metadata, SessionBuilder};

    /// A function of this test binary to disassemble, long enough to cut short.
    #[inline(never)]
    fn a_function_to_disassemble(x: u64) -> u64 {
        (0..x).fold(7, |acc, i| acc.rotate_left(5) ^ i.wrapping_mul(0x9E37_79B9))
    }

    fn exe() -> String {
        std::fs::canonicalize(std::env::current_exe().unwrap())
            .unwrap()
            .display()
            .to_string()
    }

    /// This binary's build ID, and the file offset and size of `a_function_to_disassemble`, read
    /// by `object` apart from the code under test.
    fn marker() -> (String, u64, u64) {
        let data = std::fs::read(exe()).unwrap();
        let elf = object::File::parse(&*data).unwrap();
        let id = hex(elf.build_id().unwrap().expect("a build ID"), "");
        let symbol = elf
            .symbols()
            .find(|s| {
                s.name()
                    .is_ok_and(|n| n.contains("a_function_to_disassemble"))
            })
            .expect("the function's symbol");
        let segment = (elf.segments())
            .find(|s| s.address() <= symbol.address() && symbol.address() < s.address() + s.size())
            .unwrap();
        let offset = segment.file_range().0 + (symbol.address() - segment.address());
        (id, offset, symbol.size())
    }

    #[test]
    fn a_function_of_a_binary_is_decoded_whole_from_its_own_bytes() {
        assert!(a_function_to_disassemble(3) != 0);
        let (id, offset, size) = marker();
        // Any offset inside the function finds all of it.
        let listing = disassemble(&exe(), Some(&id), offset + 1, Limits::default()).unwrap();
        assert!(listing.symbol.contains("a_function_to_disassemble"));
        assert_eq!((listing.size, listing.shown), (size, size));
        assert_eq!(listing.end, offset + size);
        assert_eq!(listing.cut, None);
        assert_eq!(listing.build_id.as_deref(), Some(&*id));
        let lines = &listing.instructions;
        assert_eq!(lines[0].offset, offset);
        assert_eq!(lines[0].address, listing.address);
        // Back to back, each as long as its bytes, covering the function exactly.
        let file = std::fs::read(exe()).unwrap();
        let mut at = offset;
        for line in lines {
            assert_eq!(line.offset, at, "{line:?}");
            let len = line.bytes.split(' ').count() as u64;
            assert_eq!(
                line.bytes,
                hex(&file[at as usize..(at + len) as usize], " ")
            );
            assert!(!line.text.is_empty());
            at += len;
        }
        assert_eq!(at, offset + size);
        assert!(lines.iter().any(|l| l.text.starts_with("ret")), "{lines:?}");
    }

    #[test]
    fn a_long_function_is_cut_at_the_limit_and_says_how_much() {
        let (id, offset, size) = marker();
        let limits = Limits {
            function: 8,
            ..Limits::default()
        };
        let listing = disassemble(&exe(), Some(&id), offset, limits).unwrap();
        assert!(size > 8);
        assert_eq!(
            (listing.size, listing.shown, listing.end),
            (size, 8, offset + 8)
        );
        let covered: usize = (listing.instructions.iter())
            .map(|l| l.bytes.split(' ').count())
            .sum();
        assert!((8..8 + 15).contains(&covered), "{covered}");
    }

    #[test]
    fn a_changed_binary_a_missing_one_and_others_not_read_say_why() {
        let (_, offset, _) = marker();
        let refused = |path: &str, id: Option<&str>, limits| {
            disassemble(path, id, offset, limits).unwrap_err()
        };
        let why = refused(&exe(), Some("00ff"), Limits::default());
        assert!(
            why.starts_with("build ID ") && why.contains("00ff when recorded"),
            "{why}"
        );
        let why = refused("/nonexistent/prof-binary", None, Limits::default());
        assert_eq!(why, "not found on this machine");
        assert_eq!(
            refused("[vdso]", None, Limits::default()),
            "not a file the loader named by its path"
        );
        assert_eq!(refused("/", None, Limits::default()), "not a regular file");
        let small = Limits {
            binary: 1 << 20,
            ..Limits::default()
        };
        let why = refused(&exe(), None, small);
        assert_eq!(why, "larger than 1 MiB: not read");
        let dir = std::env::temp_dir().join(format!("prof-disasm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = dir.join("not-elf");
        std::fs::write(&text, "not a binary\n").unwrap();
        let why = refused(text.to_str().unwrap(), None, Limits::default());
        assert!(why.starts_with("not an ELF file"), "{why}");
        // A huge (sparse) file is refused by its size before anything is read.
        let huge = dir.join("huge");
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(MAX_BINARY_BYTES + 1)
            .unwrap();
        let why = refused(huge.to_str().unwrap(), None, Limits::default());
        assert_eq!(why, "larger than 4096 MiB: not read");
        let why = disassemble(&exe(), None, u64::MAX - 1, Limits::default()).unwrap_err();
        assert!(why.starts_with("no loaded segment holds"), "{why}");
    }

    fn session(host: &str, mappings: usize) -> Session {
        of_binary(host, mappings, "/bin/app", "ab")
    }

    /// A session recorded on `host` with `mappings` mappings of `path` (build ID `id`).
    fn of_binary(host: &str, mappings: usize, path: &str, id: &str) -> Session {
        let mut b = SessionBuilder::new(Metadata {
            hostname: host.to_owned(),
            ..Metadata::default()
        });
        for i in 0..mappings as u64 {
            b.push_mapping(&MappingSpec {
                start: 0x1000 * (i + 1),
                limit: 0x1000 * (i + 2),
                offset: 0,
                path,
                build_id: Some(id),
            });
        }
        b.finish()
    }

    /// The server's route: a session recorded here gets its function as JSON; one recorded
    /// elsewhere, one whose binary was rebuilt, one whose binary is gone, a mapping or a profile
    /// that is not there and a malformed query get a 404 whose one line says why.
    #[test]
    fn the_route_lists_the_code_of_a_session_recorded_here_and_says_why_not_otherwise() {
        let (id, offset, size) = marker();
        let exe = exe();
        let host = this_host();
        let file = |name: &str, session: &Session| {
            crate::SessionFile::from_session(name, session).unwrap()
        };
        let files = vec![
            file("here.json", &of_binary(&host, 1, &exe, &id)),
            file(
                "elsewhere.json",
                &of_binary("not-this-machine", 1, &exe, &id),
            ),
            file("rebuilt.json", &of_binary(&host, 1, &exe, "00ff")),
            file(
                "gone.json",
                &of_binary(&host, 1, "/nonexistent/prof-app", &id),
            ),
        ];
        const SECRET: &str = "0123456789abcdef0123456789abcdef";
        let site = crate::routes::Site::new(SECRET.into(), files, None).unwrap();
        let ask = |query: String| {
            let path = format!("/{SECRET}/disasm?{query}");
            let reply = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(site.answer("GET", &path, true));
            let body = String::from_utf8(reply.body.to_vec()).unwrap();
            (reply.status, reply.mime, body)
        };
        let (status, mime, body) = ask(format!("session=0&mapping=0&offset={offset}"));
        assert_eq!((status, mime), (200, "application/json"), "{body}");
        let listing: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(listing["symbol"]
            .as_str()
            .unwrap()
            .contains("a_function_to_disassemble"));
        assert_eq!(listing["end"], offset + size);
        assert_eq!(listing["instructions"][0]["offset"], offset);
        let refused = |query: String, why: &str| {
            let (status, _, body) = ask(query);
            assert_eq!(status, 404, "{body}");
            assert_eq!(body.lines().count(), 1, "{body}");
            assert!(body.contains(why), "{body} lacks {why}");
        };
        refused(
            format!("session=1&mapping=0&offset={offset}"),
            "recorded on not-this-machine",
        );
        refused(
            format!("session=2&mapping=0&offset={offset}"),
            "00ff when recorded",
        );
        refused(
            format!("session=0&mapping=1&offset={offset}"),
            "no mapping 1",
        );
        refused(
            format!("session=3&mapping=0&offset={offset}"),
            "/nonexistent/prof-app: not found on this machine",
        );
        refused(
            format!("session=4&mapping=0&offset={offset}"),
            "no profile 4",
        );
        refused("session=0&mapping=0".to_owned(), "no offset=NUMBER");
    }

    #[test]
    fn only_sessions_recorded_here_with_mappings_are_read() {
        let here = Binaries::of_on(&session("box", 1), "box");
        assert_eq!(here.refused, None);
        assert_eq!(
            here.mappings,
            [("/bin/app".to_owned(), Some("ab".to_owned()))]
        );
        let elsewhere = Binaries::of_on(&session("other", 1), "box")
            .refused
            .unwrap();
        assert!(elsewhere.starts_with("recorded on other, not on this machine (box)"));
        let unknown = Binaries::of_on(&session("", 1), "box").refused.unwrap();
        assert!(unknown.contains("does not say which machine"), "{unknown}");
        let bare = Binaries::of_on(&session("box", 0), "box").refused.unwrap();
        assert!(bare.contains("no mappings"), "{bare}");
        // The request picks a session and a mapping by index, and nothing else.
        let binaries = [here, Binaries::of_on(&session("other", 1), "box")];
        let wanted = |session, mapping| Wanted {
            session,
            mapping,
            offset: 0,
        };
        assert_eq!(
            target(&binaries, wanted(0, 0)),
            Ok(("/bin/app".to_owned(), Some("ab".to_owned())))
        );
        assert_eq!(
            target(&binaries, wanted(0, 1)),
            Err("the profile has no mapping 1".to_owned())
        );
        assert!(target(&binaries, wanted(1, 0))
            .unwrap_err()
            .starts_with("recorded on other"));
        assert_eq!(
            target(&binaries, wanted(2, 0)),
            Err("no profile 2".to_owned())
        );
    }

    #[test]
    fn the_query_gives_three_decimal_numbers_or_is_refused() {
        let wanted = Wanted {
            session: 1,
            mapping: 2,
            offset: 4096,
        };
        assert_eq!(requested("session=1&mapping=2&offset=4096"), Ok(wanted));
        assert_eq!(requested("offset=4096&x=y&mapping=2&session=1"), Ok(wanted));
        for bad in [
            "",
            "session=1&mapping=2",
            "session=-1&mapping=2&offset=1",
            "session=1&mapping=0x2&offset=1",
            "sessions=1&mapping=2&offset=3",
        ] {
            assert!(requested(bad).is_err(), "{bad}");
        }
    }
}
