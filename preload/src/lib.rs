//! prof's allocation interposer, for `prof record --mode alloc -- CMD`.
//!
//! prof starts CMD with this library in `LD_PRELOAD` and these variables: `PROF_ALLOC_FD` (the
//! descriptor of a stream socket whose other end prof reads), `PROF_ALLOC_PID` (prof's pid),
//! `PROF_ALLOC_MEAN` (the mean number of bytes between samples) and `PROF_ALLOC_STACK` (bytes
//! of stack copied with each sample). Without them every function passes straight to the C
//! library's.
//!
//! The channel is the program's only while it is prof's: prof puts it above the descriptors
//! programs use (the top of the first 1,024), the library uses it only when its other end is
//! prof's (`SO_PEERCRED`) at load, and before each record it checks that the descriptor is
//! still that socket (`fstat`: the device and inode seen at load). A program that closed it,
//! as daemons close every descriptor, and perhaps opened one of its own under its number, is
//! never written to: sampling stops for good (prof says so). At load the library also takes
//! prof's variables, and its own entry in `LD_PRELOAD`, out of the environment, and gives them
//! back only to programs started while prof still reads the channel (see `env`).
//!
//! The library defines `malloc`, `calloc`, `realloc`, `reallocarray`, `free`,
//! `posix_memalign`, `aligned_alloc`, `memalign`, `valloc` and `pvalloc`, which the dynamic
//! loader binds before the C library's, and calls the C library's (`dlsym(RTLD_NEXT)`). Each
//! thread counts bytes down from a draw of an exponential distribution (a Poisson process over
//! bytes, as the in-process sampler and Go's and tcmalloc's heap profilers do); the allocation
//! that crosses zero is sampled: its address, size, the registers and a copy of the stack (read
//! with `process_vm_readv`, which stops at the end of the mapping instead of faulting) go to prof,
//! which unwinds the copy with the same unwinder as its perf rings' and computes the unbiased
//! estimate. Sampled blocks are kept in a fixed table so that their `free` is sent too (in-use
//! bytes); other frees cost one read of a 16 KiB filter in front of it.
//!
//! At load the library sends its process's `/proc/self/maps`, from which prof learns the objects
//! to unwind and name (prof reads the maps again itself when a sample's address is in none of
//! them, after a `dlopen`: interposing `dlopen` would change whose `RUNPATH` it searches); a
//! forked child says so, since it starts with its parent's objects.
//!
//! This is system code through and through: every function here runs inside another program's
//! allocator, so nothing here allocates, takes a lock that can block (one spin lock, held only
//! while a sample is written), or unwinds (panics abort).
//!
//! The wire format (native byte order), one record after another: a header of `kind: u32`,
//! `len: u32` (the whole record's bytes), `pid: u32`, `tid: u32`, `time: u64`
//! (`CLOCK_MONOTONIC` nanoseconds), then by kind:
//! - [`KIND_START`] (the process loaded the library: a new address space): the text of
//!   `/proc/self/maps`;
//! - [`KIND_FORK`]: `ppid: u32`, `pad: u32` (a forked child, its parent's address space);
//! - [`KIND_ALLOC`]: `addr`, `size`, `pc`, `sp`, `fp`, `lr` (u64 each), the thread's name
//!   (16 bytes, NUL-padded), then the stack bytes copied from `sp` up;
//! - [`KIND_FREE`]: `addr: u64`.

use libc::{c_int, c_void, size_t};
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// A process loaded the library: a new address space, its maps follow.
pub const KIND_START: u32 = 1;
/// A forked child: its parent's address space.
pub const KIND_FORK: u32 = 3;
/// A sampled allocation.
pub const KIND_ALLOC: u32 = 4;
/// A sampled block freed.
pub const KIND_FREE: u32 = 5;

/// Bytes of the header every record starts with.
const HEADER: usize = 24;
/// Bytes of an allocation record before its stack.
const ALLOC_FIXED: usize = HEADER + 6 * 8 + 16;
/// The most stack bytes a sample carries.
const MAX_STACK: usize = 65_536;
/// The most bytes of `/proc/self/maps` sent (the rest is cut).
const MAX_MAPS: usize = 1 << 20;

type MallocFn = unsafe extern "C" fn(size_t) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type CallocFn = unsafe extern "C" fn(size_t, size_t) -> *mut c_void;
type ReallocFn = unsafe extern "C" fn(*mut c_void, size_t) -> *mut c_void;
type ReallocArrayFn = unsafe extern "C" fn(*mut c_void, size_t, size_t) -> *mut c_void;
type AlignFn = unsafe extern "C" fn(size_t, size_t) -> *mut c_void;
type PosixMemalignFn = unsafe extern "C" fn(*mut *mut c_void, size_t, size_t) -> c_int;

/// One function of the C library's, looked up once.
struct Real {
    name: &'static [u8],
    at: AtomicUsize,
}

impl Real {
    const fn new(name: &'static [u8]) -> Real {
        Real {
            name,
            at: AtomicUsize::new(0),
        }
    }

    /// The address of the next definition of the function after this library's (0 when there
    /// is none). While `dlsym` runs (it may allocate), allocations are served from
    /// [`Bootstrap`].
    fn get(&self) -> usize {
        let at = self.at.load(Ordering::Acquire);
        if at != 0 {
            return at;
        }
        RESOLVING.fetch_add(1, Ordering::AcqRel);
        // SAFETY: `name` is a NUL-terminated byte string (every `Real` is built from a literal
        // ending in `\0`) and `RTLD_NEXT` asks for the definition after this object's.
        let found = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr().cast()) } as usize;
        RESOLVING.fetch_sub(1, Ordering::AcqRel);
        self.at.store(found, Ordering::Release);
        found
    }
}

static MALLOC: Real = Real::new(b"malloc\0");
static FREE: Real = Real::new(b"free\0");
static CALLOC: Real = Real::new(b"calloc\0");
static REALLOC: Real = Real::new(b"realloc\0");
static REALLOCARRAY: Real = Real::new(b"reallocarray\0");
static MEMALIGN: Real = Real::new(b"memalign\0");
static ALIGNED_ALLOC: Real = Real::new(b"aligned_alloc\0");
static POSIX_MEMALIGN: Real = Real::new(b"posix_memalign\0");
static VALLOC: Real = Real::new(b"valloc\0");
static PVALLOC: Real = Real::new(b"pvalloc\0");

/// Above zero while `dlsym` runs.
static RESOLVING: AtomicUsize = AtomicUsize::new(0);

/// Memory handed out while `dlsym` runs (it may call `calloc` for its error state), never freed.
struct Bootstrap {
    bytes: UnsafeCell<Aligned>,
    used: AtomicUsize,
}

// SAFETY: each caller gets a disjoint range of `bytes`, reserved with an atomic add.
unsafe impl Sync for Bootstrap {}

/// The bootstrap buffer, aligned as `malloc`'s results must be.
#[repr(C, align(16))]
struct Aligned([u8; 65_536]);

static BOOTSTRAP: Bootstrap = Bootstrap {
    bytes: UnsafeCell::new(Aligned([0; 65_536])),
    used: AtomicUsize::new(0),
};

impl Bootstrap {
    /// `size` zeroed bytes aligned to 16, or null when the buffer is spent.
    fn take(&self, size: usize) -> *mut c_void {
        let size = (size.max(1) + 15) & !15;
        let at = self.used.fetch_add(size, Ordering::AcqRel);
        if at + size > 65_536 {
            return std::ptr::null_mut();
        }
        // SAFETY: `at..at + size` lies inside the buffer (checked above) and was reserved for
        // this caller alone; `Aligned` is 16-aligned and `at` a multiple of 16.
        unsafe { self.bytes.get().cast::<u8>().add(at).cast() }
    }

    /// True for memory [`Bootstrap::take`] handed out.
    fn holds(&self, ptr: *mut c_void) -> bool {
        let start = self.bytes.get() as usize;
        (start..start + 65_536).contains(&(ptr as usize))
    }
}

/// What prof asked for; `fd` is -1 until the library is set up (or when prof did not start
/// this process), and again after prof went away.
struct Config {
    fd: AtomicI32,
    /// The channel's identity (`st_dev`, `st_ino`) when the library loaded: a descriptor of that
    /// number that is anything else is the program's, never written to.
    dev: AtomicU64,
    ino: AtomicU64,
    mean: AtomicU64,
    stack: AtomicUsize,
}

static CONFIG: Config = Config {
    fd: AtomicI32::new(-1),
    dev: AtomicU64::new(0),
    ino: AtomicU64::new(0),
    mean: AtomicU64::new(0),
    stack: AtomicUsize::new(0),
};

/// `fd`'s identity (`st_dev`, `st_ino`), or `None` when it is not open.
fn identity(fd: c_int) -> Option<(u64, u64)> {
    // SAFETY: an all-zero `stat` is a valid value of the plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a live, writable stat; a closed descriptor only fails with EBADF.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return None;
    }
    Some((st.st_dev as u64, st.st_ino as u64))
}

/// The channel's descriptor when it is set up and still prof's socket (the identity seen at
/// load); one `fstat`, and nothing written.
fn verified() -> Option<c_int> {
    let fd = CONFIG.fd.load(Ordering::Relaxed);
    let ours = (
        CONFIG.dev.load(Ordering::Relaxed),
        CONFIG.ino.load(Ordering::Relaxed),
    );
    (fd >= 0 && identity(fd) == Some(ours)).then_some(fd)
}

/// The channel's descriptor when it is still prof's socket; otherwise (the program closed it,
/// and may have opened something of its own under its number) sampling stops for good, and -1.
fn channel() -> c_int {
    verified().unwrap_or_else(|| {
        CONFIG.fd.store(-1, Ordering::Relaxed);
        -1
    })
}

/// True when the channel is still prof's socket and prof still holds its end (no `POLLHUP`):
/// only then may a program this process starts be given the library and the channel. Makes
/// two system calls and writes nothing but their results (it may run in a `vfork` child).
fn channel_alive() -> bool {
    let Some(fd) = verified() else {
        return false;
    };
    let mut pfd = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: `pfd` is one live pollfd; a timeout of 0 returns at once.
    let n = unsafe { libc::poll(&mut pfd, 1, 0) };
    n == 0 || (n == 1 && pfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) == 0)
}

thread_local! {
    /// Bytes left before this thread's next sample (-1 before the first draw).
    static LEFT: Cell<i64> = const { Cell::new(-1) };
    /// This thread's random state.
    static RANDOM: Cell<u64> = const { Cell::new(0) };
    /// True while this thread is inside the library's own sampling code.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// The buffer a record is built in, and the lock that guards it and the socket.
struct Out {
    locked: AtomicBool,
    bytes: UnsafeCell<[u8; ALLOC_FIXED + MAX_STACK]>,
    maps: UnsafeCell<[u8; MAX_MAPS]>,
}

// SAFETY: `bytes` and `maps` are only touched by the holder of `locked` (see `with_out`).
unsafe impl Sync for Out {}

static OUT: Out = Out {
    locked: AtomicBool::new(false),
    bytes: UnsafeCell::new([0; ALLOC_FIXED + MAX_STACK]),
    maps: UnsafeCell::new([0; MAX_MAPS]),
};

fn lock() {
    while OUT
        .locked
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
        // SAFETY: `sched_yield` takes no argument and cannot fail in a way that matters here.
        unsafe { libc::sched_yield() };
    }
}

fn unlock() {
    OUT.locked.store(false, Ordering::Release);
}

/// Runs `f` with the record buffer, holding the lock.
fn with_out(f: impl FnOnce(&mut [u8; ALLOC_FIXED + MAX_STACK], &mut [u8; MAX_MAPS])) {
    lock();
    // SAFETY: the lock is held, so no other thread touches the buffers until `unlock`.
    unsafe { f(&mut *OUT.bytes.get(), &mut *OUT.maps.get()) };
    unlock();
}

/// The sampled blocks still live: open addressing over addresses (0 is empty, 1 a removed
/// entry), probed at most [`PROBES`] slots from the address's hash.
struct Sampled {
    slots: [AtomicU64; SLOTS],
    /// How many listed addresses hash to each counter (255: that many or more, for good): a
    /// `free` whose counter is 0 (almost every one) skips the table, whose slots are spread over
    /// 2 MiB and would cost a cache miss each.
    filter: [AtomicU8; FILTER],
}

/// Counters of [`Sampled::filter`]: 16 KiB, which stays in the first-level cache of a program
/// that frees often (64 KiB cost a second-level miss per `free`, 5 ns of 18 in a loop of
/// `malloc` and `free`).
const FILTER: usize = 1 << 14;

const SLOTS: usize = 1 << 18;
const PROBES: usize = 32;
const EMPTY: u64 = 0;
const REMOVED: u64 = 1;

static SAMPLED: Sampled = Sampled {
    slots: [const { AtomicU64::new(EMPTY) }; SLOTS],
    filter: [const { AtomicU8::new(0) }; FILTER],
};

impl Sampled {
    fn start(addr: u64) -> usize {
        (addr.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 46) as usize % SLOTS
    }

    fn counter(addr: u64) -> &'static AtomicU8 {
        &SAMPLED.filter[((addr >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48) as usize % FILTER]
    }

    /// Lists `addr` (under the output lock, so inserts and removals do not race). False when
    /// its probe run is full: its `free` is then not reported.
    fn insert(&self, addr: u64) -> bool {
        let start = Self::start(addr);
        for i in 0..PROBES {
            let slot = &self.slots[(start + i) % SLOTS];
            let v = slot.load(Ordering::Relaxed);
            if v == EMPTY || v == REMOVED || v == addr {
                if v != addr {
                    let counter = Self::counter(addr);
                    let n = counter.load(Ordering::Relaxed);
                    counter.store(n.saturating_add(1), Ordering::Release);
                }
                slot.store(addr, Ordering::Release);
                return true;
            }
        }
        false
    }

    /// True when `addr` may be listed (false for almost every block: see [`Sampled::filter`]).
    fn may_hold(&self, addr: u64) -> bool {
        Self::counter(addr).load(Ordering::Acquire) != 0
    }

    /// Unlists `addr` (under the output lock); true when it was listed.
    fn remove(&self, addr: u64) -> bool {
        let start = Self::start(addr);
        for i in 0..PROBES {
            let slot = &self.slots[(start + i) % SLOTS];
            let v = slot.load(Ordering::Acquire);
            if v == EMPTY {
                return false;
            }
            if v == addr {
                let removed = slot
                    .compare_exchange(addr, REMOVED, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok();
                if removed {
                    let counter = Self::counter(addr);
                    let n = counter.load(Ordering::Relaxed);
                    if n != u8::MAX {
                        counter.store(n - 1, Ordering::Release);
                    }
                }
                return removed;
            }
        }
        false
    }
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn tid() -> u32 {
    // SAFETY: `gettid` takes no argument and always succeeds.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

fn pid() -> u32 {
    // SAFETY: `getpid` takes no argument and always succeeds.
    unsafe { libc::getpid() as u32 }
}

fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

fn header(buf: &mut [u8], kind: u32, len: usize) {
    put(buf, 0, &kind.to_ne_bytes());
    put(buf, 4, &(len as u32).to_ne_bytes());
    put(buf, 8, &pid().to_ne_bytes());
    put(buf, 12, &tid().to_ne_bytes());
    put(buf, 16, &now_ns().to_ne_bytes());
}

/// Sends `bytes` whole (the lock is held) when the channel is still prof's (checked before
/// each record: one `fstat`); when prof is gone or the channel is, stops sampling for good.
fn send(bytes: &[u8]) {
    let mut sent = 0;
    while sent < bytes.len() {
        // Checked again before each part: another thread of the program may close it meanwhile.
        let fd = channel();
        if fd < 0 {
            return;
        }
        // SAFETY: the range `sent..` of `bytes` is valid for reads; MSG_NOSIGNAL keeps a closed
        // socket from raising SIGPIPE in the program.
        let n = unsafe {
            libc::send(
                fd,
                bytes[sent..].as_ptr().cast(),
                bytes.len() - sent,
                libc::MSG_NOSIGNAL,
            )
        };
        if n > 0 {
            sent += n as usize;
        } else if n < 0 && errno() == libc::EINTR {
            continue;
        } else {
            CONFIG.fd.store(-1, Ordering::Relaxed);
            return;
        }
    }
}

fn errno() -> c_int {
    // SAFETY: `__errno_location` returns this thread's errno, always valid.
    unsafe { *libc::__errno_location() }
}

/// Sends this process's maps as a record of `kind`.
fn send_maps(kind: u32) {
    with_out(|_, maps| {
        // SAFETY: the path is a NUL-terminated literal.
        let fd = unsafe {
            libc::open(
                c"/proc/self/maps".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return;
        }
        let mut len = HEADER;
        while len < MAX_MAPS {
            // SAFETY: `maps[len..]` is valid for writes of `MAX_MAPS - len` bytes.
            let n = unsafe { libc::read(fd, maps[len..].as_mut_ptr().cast(), MAX_MAPS - len) };
            if n > 0 {
                len += n as usize;
            } else if n < 0 && errno() == libc::EINTR {
                continue;
            } else {
                break;
            }
        }
        // SAFETY: `fd` was opened above and is closed once.
        unsafe { libc::close(fd) };
        header(&mut maps[..], kind, len);
        send(&maps[..len]);
    });
}

/// Reads the variables prof set, then removes them (and the library's entry in `LD_PRELOAD`)
/// from the environment, so that the program sees the one it would have without prof; called
/// once at load (from `.init_array`).
extern "C" fn setup() {
    // Resolved now, while one thread runs: an `exec` wrapper may run in a `vfork` child, which
    // must not call `dlsym` (it allocates in the parent's memory and takes the loader's lock).
    env::resolve();
    configure();
    env::strip();
}

/// Takes prof's settings from the environment when prof started this process and the
/// channel is prof's socket.
fn configure() {
    let var = |name: &std::ffi::CStr| -> Option<u64> {
        // SAFETY: `name` is NUL-terminated; `getenv`'s result is a NUL-terminated string or null,
        // read at once, before anything could change the environment.
        let value = unsafe { libc::getenv(name.as_ptr()) };
        if value.is_null() {
            return None;
        }
        // SAFETY: non-null `getenv` results are NUL-terminated strings.
        let text = unsafe { std::ffi::CStr::from_ptr(value) };
        text.to_str().ok()?.parse().ok()
    };
    let (Some(fd), Some(mean), Some(stack), Some(prof)) = (
        var(c"PROF_ALLOC_FD"),
        var(c"PROF_ALLOC_MEAN"),
        var(c"PROF_ALLOC_STACK"),
        var(c"PROF_ALLOC_PID"),
    ) else {
        return;
    };
    // The descriptor is inherited through every `exec`; a program that closed it may have
    // opened something else under its number. Only a socket whose other end prof made is used.
    let mut peer = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut size = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `peer` is valid for `size` bytes of writes; a descriptor that is no socket fails.
    let asked = unsafe {
        libc::getsockopt(
            fd as c_int,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut peer as *mut libc::ucred).cast(),
            &mut size,
        )
    };
    if asked != 0 || u64::try_from(peer.pid).ok() != Some(prof) {
        return;
    }
    let Some((dev, ino)) = identity(fd as c_int) else {
        return;
    };
    CONFIG.dev.store(dev, Ordering::Relaxed);
    CONFIG.ino.store(ino, Ordering::Relaxed);
    CONFIG.mean.store(mean.max(1), Ordering::Relaxed);
    CONFIG
        .stack
        .store((stack as usize).min(MAX_STACK) & !7, Ordering::Relaxed);
    CONFIG.fd.store(fd as i32, Ordering::Relaxed);
    // SAFETY: the three handlers are `extern "C" fn()`, as `pthread_atfork` expects.
    unsafe {
        libc::pthread_atfork(
            Some(before_fork),
            Some(after_fork_parent),
            Some(after_fork_child),
        )
    };
    send_maps(KIND_START);
}

#[used]
#[link_section = ".init_array"]
static SETUP: extern "C" fn() = setup;

/// A fork happens while no thread writes a record (the lock is held across it), so the child's
/// copy of the lock is not left held by a thread that does not exist there.
extern "C" fn before_fork() {
    lock();
}

extern "C" fn after_fork_parent() {
    unlock();
}

extern "C" fn after_fork_child() {
    unlock();
    let parent = {
        // SAFETY: `getppid` takes no argument and always succeeds.
        unsafe { libc::getppid() as u32 }
    };
    with_out(|buf, _| {
        let len = HEADER + 8;
        header(&mut buf[..], KIND_FORK, len);
        put(&mut buf[..], HEADER, &parent.to_ne_bytes());
        put(&mut buf[..], HEADER + 4, &0u32.to_ne_bytes());
        send(&buf[..len]);
    });
}

/// A draw of the exponential distribution of mean `mean`, from this thread's generator.
fn draw(mean: u64) -> i64 {
    let mut x = RANDOM.with(Cell::get);
    if x == 0 {
        x = now_ns() ^ (u64::from(tid()) << 32) | 1;
    }
    // xorshift64*
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    RANDOM.with(|r| r.set(x));
    let word = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
    let uniform = ((word >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    (-uniform.ln() * mean as f64) as i64 + 1
}

/// Counts `size` bytes down; true when this allocation is sampled. One access to the thread's
/// state on the common path (each costs a call into the dynamic loader's TLS lookup here).
fn counts_down(size: usize) -> bool {
    let mean = CONFIG.mean.load(Ordering::Relaxed);
    if mean == 0 {
        return false;
    }
    let due = LEFT.with(|l| {
        let left = l.get() - size as i64;
        l.set(left);
        left <= 0
    });
    if !due || CONFIG.fd.load(Ordering::Relaxed) < 0 {
        return false;
    }
    // The first allocation of each thread starts at -1 - size: it draws its first distance
    // and is sampled only when that is already crossed.
    let fresh = LEFT.with(Cell::get) == -1 - size as i64;
    let next = draw(mean);
    if fresh && next > size as i64 {
        LEFT.with(|l| l.set(next - size as i64));
        return false;
    }
    LEFT.with(|l| l.set(next));
    true
}

/// Records a sampled allocation of `size` bytes at `addr` with this thread's stack.
#[inline(never)]
fn sample(addr: *mut c_void, size: usize) {
    if addr.is_null() || BUSY.with(Cell::get) {
        return;
    }
    BUSY.with(|b| b.set(true));
    let (pc, sp, fp, lr) = registers();
    let stack = CONFIG.stack.load(Ordering::Relaxed);
    with_out(|buf, _| {
        let local = libc::iovec {
            iov_base: buf[ALLOC_FIXED..].as_mut_ptr().cast(),
            iov_len: stack,
        };
        let remote = libc::iovec {
            iov_base: sp as *mut c_void,
            iov_len: stack,
        };
        // SAFETY: `local` is valid for `stack` bytes of writes (at most MAX_STACK, the room after
        // the fixed part); reading this process's own stack through the kernel stops at the end
        // of its mapping instead of faulting.
        let copied = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        let copied = copied.max(0) as usize;
        let len = ALLOC_FIXED + copied;
        header(&mut buf[..], KIND_ALLOC, len);
        for (i, word) in [addr as u64, size as u64, pc, sp, fp, lr]
            .iter()
            .enumerate()
        {
            put(&mut buf[..], HEADER + 8 * i, &word.to_ne_bytes());
        }
        let mut name = [0u8; 16];
        // SAFETY: PR_GET_NAME writes at most 16 bytes into `name`.
        unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr()) };
        put(&mut buf[..], HEADER + 48, &name);
        SAMPLED.insert(addr as u64);
        send(&buf[..len]);
    });
    BUSY.with(|b| b.set(false));
}

/// This function's own pc, sp, frame pointer and link register, from which prof unwinds (through
/// [`sample`] and the interposed function to the program's code).
#[inline(always)]
fn registers() -> (u64, u64, u64, u64) {
    let (pc, sp, fp, lr): (u64, u64, u64, u64);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: reads three registers into outputs; touches no memory and no flags.
    unsafe {
        std::arch::asm!(
            "lea {pc}, [rip]",
            "mov {sp}, rsp",
            "mov {fp}, rbp",
            pc = out(reg) pc,
            sp = out(reg) sp,
            fp = out(reg) fp,
            options(nomem, nostack, preserves_flags),
        );
        lr = 0;
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: reads four registers into outputs; touches no memory and no flags.
    unsafe {
        std::arch::asm!(
            "adr {pc}, .",
            "mov {sp}, sp",
            "mov {fp}, x29",
            "mov {lr}, x30",
            pc = out(reg) pc,
            sp = out(reg) sp,
            fp = out(reg) fp,
            lr = out(reg) lr,
            options(nomem, nostack, preserves_flags),
        );
    }
    (pc, sp, fp, lr)
}

/// Reports the free of `ptr` when it was sampled.
fn freed(ptr: *mut c_void) {
    if ptr.is_null() || CONFIG.fd.load(Ordering::Relaxed) < 0 || !SAMPLED.may_hold(ptr as u64) {
        return;
    }
    with_out(|buf, _| {
        if SAMPLED.remove(ptr as u64) {
            let len = HEADER + 8;
            header(&mut buf[..], KIND_FREE, len);
            put(&mut buf[..], HEADER, &(ptr as u64).to_ne_bytes());
            send(&buf[..len]);
        }
    });
}

/// Counts an allocation of `size` bytes that returned `ptr`, sampling it when its turn came.
fn allocated(ptr: *mut c_void, size: usize) -> *mut c_void {
    if counts_down(size) {
        sample(ptr, size);
    }
    ptr
}

macro_rules! real {
    ($slot:ident, $ty:ty) => {{
        let at = $slot.get();
        if at == 0 {
            None
        } else {
            // SAFETY: `at` is the address `dlsym` gave for this function's name, whose C type
            // is `$ty`.
            Some(unsafe { std::mem::transmute::<usize, $ty>(at) })
        }
    }};
}

/// The C library's `malloc`, sampled.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn malloc(size: size_t) -> *mut c_void {
    if RESOLVING.load(Ordering::Acquire) > 0 {
        return BOOTSTRAP.take(size);
    }
    let Some(f) = real!(MALLOC, MallocFn) else {
        return BOOTSTRAP.take(size);
    };
    // SAFETY: the caller's contract is the C library's.
    allocated(unsafe { f(size) }, size)
}

/// The C library's `calloc`, sampled.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn calloc(n: size_t, size: size_t) -> *mut c_void {
    let Some(total) = n.checked_mul(size) else {
        return std::ptr::null_mut();
    };
    if RESOLVING.load(Ordering::Acquire) > 0 {
        return BOOTSTRAP.take(total);
    }
    let Some(f) = real!(CALLOC, CallocFn) else {
        return BOOTSTRAP.take(total);
    };
    // SAFETY: the caller's contract is the C library's.
    allocated(unsafe { f(n, size) }, total)
}

/// The C library's `realloc`, sampled: the old block's free, the new block's allocation.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn realloc(ptr: *mut c_void, size: size_t) -> *mut c_void {
    if BOOTSTRAP.holds(ptr) {
        // SAFETY: as `malloc`'s caller.
        let new = unsafe { malloc(size) };
        if !new.is_null() {
            // The old block's size is unknown: copy what fits in the new block and in the
            // bootstrap buffer after `ptr` (all of it readable).
            let end = BOOTSTRAP.bytes.get() as usize + 65_536;
            let n = size.min(end - ptr as usize);
            // SAFETY: `new` has `size` bytes, `ptr..end` lies in the bootstrap buffer, and `n`
            // is at most both; the two do not overlap (`new` comes from the C library or later
            // in the buffer).
            unsafe { std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), new.cast::<u8>(), n) };
        }
        return new;
    }
    let Some(f) = real!(REALLOC, ReallocFn) else {
        return std::ptr::null_mut();
    };
    freed(ptr);
    // SAFETY: the caller's contract is the C library's.
    let new = unsafe { f(ptr, size) };
    if size == 0 {
        return new;
    }
    allocated(new, size)
}

/// The C library's `reallocarray`, sampled as `realloc`.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn reallocarray(ptr: *mut c_void, n: size_t, size: size_t) -> *mut c_void {
    let Some(f) = real!(REALLOCARRAY, ReallocArrayFn) else {
        return std::ptr::null_mut();
    };
    freed(ptr);
    // SAFETY: the caller's contract is the C library's.
    let new = unsafe { f(ptr, n, size) };
    allocated(new, n.saturating_mul(size))
}

/// The C library's `free`, reporting sampled blocks.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn free(ptr: *mut c_void) {
    if ptr.is_null() || BOOTSTRAP.holds(ptr) {
        return;
    }
    freed(ptr);
    if let Some(f) = real!(FREE, FreeFn) {
        // SAFETY: the caller's contract is the C library's.
        unsafe { f(ptr) };
    }
}

/// The C library's `memalign`, sampled.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn memalign(align: size_t, size: size_t) -> *mut c_void {
    let Some(f) = real!(MEMALIGN, AlignFn) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the caller's contract is the C library's.
    allocated(unsafe { f(align, size) }, size)
}

/// The C library's `aligned_alloc`, sampled.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: size_t, size: size_t) -> *mut c_void {
    let Some(f) = real!(ALIGNED_ALLOC, AlignFn) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the caller's contract is the C library's.
    allocated(unsafe { f(align, size) }, size)
}

/// The C library's `posix_memalign`, sampled.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(
    out: *mut *mut c_void,
    align: size_t,
    size: size_t,
) -> c_int {
    let Some(f) = real!(POSIX_MEMALIGN, PosixMemalignFn) else {
        return libc::ENOMEM;
    };
    // SAFETY: the caller's contract is the C library's.
    let status = unsafe { f(out, align, size) };
    if status == 0 {
        // SAFETY: on success the C library wrote the block's address to `out`.
        allocated(unsafe { *out }, size);
    }
    status
}

/// The C library's `valloc`, sampled.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn valloc(size: size_t) -> *mut c_void {
    let Some(f) = real!(VALLOC, MallocFn) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the caller's contract is the C library's.
    allocated(unsafe { f(size) }, size)
}

/// The C library's `pvalloc`, sampled.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn pvalloc(size: size_t) -> *mut c_void {
    let Some(f) = real!(PVALLOC, MallocFn) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the caller's contract is the C library's.
    allocated(unsafe { f(size) }, size)
}

// After `real!`, which it uses.
mod env;
