//! Raw stacks (addresses, leaf first) into a session's stacks: each distinct address symbolized
//! once, its frames interned, the stacks interned root first and cut as the caller says. The
//! in-process sampler, its allocation sampler and `prof record` all build their sessions with it.

use crate::session::{Frame, FrameId, SessionBuilder, StackId, StrId};
use crate::symbolize::{module_name, object_index, AddressSpace, LoadedObject, Resolver, Symbol};
use std::collections::HashMap;
use std::sync::Arc;

/// Where [`intern_stacks`] cuts stacks: at the root end past a depth, and at frames whose
/// function is matched by name.
#[derive(Clone, Copy)]
pub struct Cut<'a> {
    /// The most addresses of a stack kept, its leaf end's (the ring already bounds them).
    pub max_depth: usize,
    /// The frames at the leaf end of a stack that this matches (given each frame's function
    /// and source file) are left out, up to the first one it does not match, which ends the
    /// stack (at least the outermost frame of the stack stays): how the allocation path (the
    /// allocator and the standard library's collections above it) is cut from allocation
    /// samples, so that they end in the code that asked for memory.
    pub leaf: &'a dyn Fn(&str, Option<&str>) -> bool,
    /// The innermost frame whose function this matches is left out with every frame that
    /// called it, unless no frame would be left (the stack is then kept whole): how prof's
    /// task wrapper and the executor are cut from the stacks where tasks waited. Neither these
    /// frames nor the stacks they make are interned.
    pub root: Option<&'a dyn Fn(&str) -> bool>,
}

impl Cut<'static> {
    /// Cuts past `max_depth` only.
    pub fn depth(max_depth: usize) -> Cut<'static> {
        Cut {
            max_depth,
            leaf: &no_function,
            root: None,
        }
    }
}

/// Matches no frame.
fn no_function(_: &str, _: Option<&str>) -> bool {
    false
}

/// Symbolizes raw stacks (addresses leaf first, the first the interrupted instruction, the others
/// return addresses) and interns them root first, cut as `cut` says; each distinct address is
/// resolved once. `None` for an empty stack. `space` says whose addresses they are (this
/// process's, or another's for `prof record`).
///
/// With [`THREAD_FROM`] stacks or more, a second thread resolves the addresses in the order
/// the walk first needs them while this one interns what is resolved: on two cores a stop
/// takes about the longer of the two rather than their sum.
pub fn intern_stacks(
    builder: &mut SessionBuilder,
    stacks: &[Box<[u64]>],
    objects: &[LoadedObject],
    space: AddressSpace,
    cut: Cut<'_>,
) -> Vec<Option<StackId>> {
    let threaded = stacks.len() >= THREAD_FROM;
    intern_with(builder, stacks, objects, space, cut, threaded)
}

/// How many stacks make a second thread for symbolization worth starting (tens of
/// microseconds): below it, a profile's addresses resolve in about as long.
pub const THREAD_FROM: usize = 64;

/// [`intern_stacks`], resolving on a second thread when `threaded` (and the thread starts).
fn intern_with(
    builder: &mut SessionBuilder,
    stacks: &[Box<[u64]>],
    objects: &[LoadedObject],
    space: AddressSpace,
    cut: Cut<'_>,
    threaded: bool,
) -> Vec<Option<StackId>> {
    let max_depth = cut.max_depth;
    std::thread::scope(|scope| {
        let mut source = Symbols::Inline(None, space);
        let mut resolving = None;
        if threaded {
            let (tx, rx) = std::sync::mpsc::channel();
            let thread = std::thread::Builder::new()
                .name("prof-symbolize".into())
                .spawn_scoped(scope, move || {
                    resolve_in_walk_order(stacks, objects, space, max_depth, &tx)
                });
            // A thread that cannot start leaves the work to this one.
            if let Ok(thread) = thread {
                resolving = Some(thread);
                source = Symbols::Sent {
                    rx,
                    early: foldhash::HashMap::default(),
                    space,
                };
            }
        }
        let ids = intern_resolved(builder, stacks, objects, cut, &mut source);
        // Its panic is this one's, as it would be had it resolved here.
        if let Some(Err(panic)) = resolving.map(|t| t.join()) {
            std::panic::resume_unwind(panic);
        }
        ids
    })
}

/// An address and whether it is a return address: what is resolved, and what a walk level holds.
type Key = (u64, bool);

/// Where the walk gets each distinct address's symbols.
enum Symbols<'a> {
    /// Resolved when first needed (the resolver made on first use, for the address space).
    Inline(Option<Resolver<'a>>, AddressSpace),
    /// Sent by [`resolve_in_walk_order`], with those that came before they were needed.
    Sent {
        rx: std::sync::mpsc::Receiver<(Key, Arc<[Symbol]>)>,
        early: foldhash::HashMap<Key, Arc<[Symbol]>>,
        space: AddressSpace,
    },
}

impl<'a> Symbols<'a> {
    /// The symbols of `key`, which is asked for once.
    fn get(&mut self, key: Key, objects: &'a [LoadedObject]) -> Arc<[Symbol]> {
        if let Symbols::Sent { rx, early, space } = self {
            if let Some(symbols) = early.remove(&key) {
                return symbols;
            }
            while let Ok((sent, symbols)) = rx.recv() {
                if sent == key {
                    return symbols;
                }
                early.insert(sent, symbols);
            }
            // The thread ended without it (it panicked, which its join reports): resolve the
            // rest here. The cache's lock was released as the thread unwound.
            let space = *space;
            *self = Symbols::Inline(None, space);
        }
        let Symbols::Inline(resolver, space) = self else {
            unreachable!("replaced by Inline above")
        };
        let resolver = resolver.get_or_insert_with(|| Resolver::new(objects, *space));
        resolver.symbols(key.0, key.1)
    }
}

/// Resolves each distinct address of `stacks` once, in the order [`intern_resolved`] first
/// meets it (root first, stack after stack), and sends it; stops early if nobody listens.
fn resolve_in_walk_order(
    stacks: &[Box<[u64]>],
    objects: &[LoadedObject],
    space: AddressSpace,
    max_depth: usize,
    tx: &std::sync::mpsc::Sender<(Key, Arc<[Symbol]>)>,
) {
    let mut resolver = Resolver::new(objects, space);
    let mut seen: foldhash::HashSet<Key> = foldhash::HashSet::default();
    let mut previous: &[u64] = &[];
    for stack in stacks {
        let n = stack.len().min(max_depth);
        let key = |stack: &[u64], n: usize, depth: usize| {
            let i = n - 1 - depth;
            (stack[i], i > 0)
        };
        // The root-end part shared with the previous stack was seen with it.
        let m = previous.len().min(max_depth);
        let shared = (0..n.min(m))
            .take_while(|&depth| key(stack, n, depth) == key(previous, m, depth))
            .count();
        for depth in shared..n {
            let key = key(stack, n, depth);
            if seen.insert(key) && tx.send((key, resolver.symbols(key.0, key.1))).is_err() {
                return;
            }
        }
        previous = stack;
    }
}

/// The walk of [`intern_stacks`], with each address's symbols from `source`.
fn intern_resolved<'a>(
    builder: &mut SessionBuilder,
    stacks: &[Box<[u64]>],
    objects: &'a [LoadedObject],
    cut: Cut<'_>,
    source: &mut Symbols<'a>,
) -> Vec<Option<StackId>> {
    let mut frames = Frames {
        objects,
        source,
        cut,
        of: foldhash::HashMap::default(),
        cut_off: foldhash::HashMap::default(),
        frames: Vec::new(),
        modules: HashMap::new(),
        texts: foldhash::HashMap::default(),
        kept: Vec::new(),
    };
    let mut stack_ids = Vec::with_capacity(stacks.len());
    // The previous stack's walk, root first from where it started.
    let mut levels: Vec<Level> = Vec::new();
    let mut previous_start = Start::From(0);
    for stack in stacks {
        // Leaf first in the raw stack; the session wants root first. Cut at the root end when
        // deeper than max_depth (the ring already bounds it).
        let n = stack.len().min(cut.max_depth);
        let key = |depth: usize| {
            let i = n - 1 - depth;
            (stack[i], i > 0)
        };
        let start = match cut.root {
            Some(_) => frames.start(builder, n, key),
            None => Start::From(0),
        };
        if start != previous_start {
            levels.clear();
            previous_start = start;
        }
        let from = match start {
            Start::From(depth) => depth,
            Start::Whole => 0,
        };
        // A stack mostly shares its root end with the one before it (the same callers): the
        // stacks interned for that part are taken over instead of being looked up again.
        let shared = levels
            .iter()
            .take(n.saturating_sub(from))
            .enumerate()
            .take_while(|(k, level)| level.key == key(from + k))
            .count();
        // Where the run of frames `cut.leaf` matches that ends the stack begins (the stack is
        // cut there): the depth and the place among that depth's frames. Found from the leaf
        // up; a stack whose leaf frame it does not match is not cut.
        let mut cut_at = None;
        for depth in (from..n).rev() {
            let (whole, kept) = frames.at(builder, key(depth), start);
            let all = frames.frames[whole].iter().chain(&frames.frames[kept]);
            let count = all.clone().count();
            let run = all.rev().take_while(|(_, trim)| *trim).count();
            if run > 0 {
                cut_at = Some((depth, count - run));
            }
            if run < count {
                break;
            }
        }
        // A level shared with the previous stack at or past the cut is this stack's to redo.
        let shared = match cut_at {
            Some((depth, _)) => shared.min(depth - from),
            None => shared,
        };
        levels.truncate(shared);
        let mut node = levels.last().and_then(|l| l.node);
        for depth in from + shared..n {
            let key = key(depth);
            let (whole, kept) = frames.at(builder, key, start);
            let all = frames.frames[whole].iter().chain(&frames.frames[kept]);
            let end = match cut_at {
                Some((at, end)) if at == depth => end,
                _ => usize::MAX,
            };
            for (i, &(frame, _)) in all.enumerate() {
                if i == end {
                    // The run is cut, but the stack's outermost frame stays.
                    if node.is_none() {
                        node = Some(builder.intern_stack(None, frame));
                    }
                    break;
                }
                node = Some(builder.intern_stack(node, frame));
            }
            if end != usize::MAX {
                // Not a level another stack may share: its frames past the cut may differ.
                break;
            }
            levels.push(Level { key, node });
        }
        stack_ids.push(node);
    }
    stack_ids
}

/// Where the walk of a stack starts, as [`Cut::root`] says.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    /// At this depth (root first), with the frames of its address after the innermost one
    /// the cut matches (all of them when none does).
    From(usize),
    /// At the root, with every frame: the cut would have left none.
    Whole,
}

/// Each distinct address's symbols, and the frames interned for them, for one walk.
struct Frames<'a, 's, 'c> {
    objects: &'a [LoadedObject],
    source: &'s mut Symbols<'a>,
    cut: Cut<'c>,
    /// By address: where its frames lie in `frames`, one array for all rather than one
    /// allocation per address. Looked up for every frame of every stack: foldhash, not SipHash
    /// (see `SessionBuilder`).
    of: foldhash::HashMap<Key, Resolved>,
    /// By address: its frames up to the innermost one `cut.root` matches, interned only for a
    /// stack kept whole.
    cut_off: foldhash::HashMap<Key, std::ops::Range<usize>>,
    /// Frames, each with whether `cut.leaf` matches it.
    frames: Vec<(FrameId, bool)>,
    /// Module names by object index: each is worked out and interned once, not once per address.
    modules: HashMap<Option<usize>, Option<StrId>>,
    /// Names and files by where their text lies: the addresses of one function share them (see
    /// `Symbol`), so each is hashed and interned once. The symbols are kept (`kept`) until the
    /// walk ends, so that no text is freed and its place taken by another.
    texts: foldhash::HashMap<(usize, usize), StrId>,
    kept: Vec<Arc<[Symbol]>>,
}

/// An address's symbols as a walk uses them.
struct Resolved {
    /// Its frames after the innermost one [`Cut::root`] matches (all when none does), in
    /// [`Frames::frames`].
    range: std::ops::Range<usize>,
    /// How many of its symbols come before them.
    first: usize,
    /// Its symbols, in [`Frames::kept`].
    symbols: usize,
}

impl Frames<'_, '_, '_> {
    /// Resolves `key` on first use, and interns its frames past the root cut.
    fn resolve(&mut self, builder: &mut SessionBuilder, key: Key) -> &Resolved {
        if !self.of.contains_key(&key) {
            let symbols = self.source.get(key, self.objects);
            let first = self.cut.root.map_or(0, |root| {
                symbols
                    .iter()
                    .rposition(|s| root(&s.name))
                    .map_or(0, |i| i + 1)
            });
            let range = self.intern(builder, key, &symbols[first..]);
            self.kept.push(symbols);
            let symbols = self.kept.len() - 1;
            let resolved = Resolved {
                range,
                first,
                symbols,
            };
            self.of.insert(key, resolved);
        }
        &self.of[&key]
    }

    /// The frames of `key` as a stack that starts as `start` says uses them, root first: those
    /// the root cut left out (only for a stack kept whole), then the others.
    fn at(
        &mut self,
        builder: &mut SessionBuilder,
        key: Key,
        start: Start,
    ) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let kept = self.resolve(builder, key).range.clone();
        let whole = match start {
            Start::Whole => self.cut_off(builder, key),
            Start::From(_) => 0..0,
        };
        (whole, kept)
    }

    /// The frames of `key` that the root cut leaves out, interned on first use.
    fn cut_off(&mut self, builder: &mut SessionBuilder, key: Key) -> std::ops::Range<usize> {
        if let Some(range) = self.cut_off.get(&key) {
            return range.clone();
        }
        let (symbols, first) = {
            let resolved = self.resolve(builder, key);
            (resolved.symbols, resolved.first)
        };
        let symbols = Arc::clone(&self.kept[symbols]);
        let range = self.intern(builder, key, &symbols[..first]);
        self.cut_off.insert(key, range.clone());
        range
    }

    /// Interns `symbols` of the address `key` as frames; where they lie in `frames`.
    fn intern(
        &mut self,
        builder: &mut SessionBuilder,
        (address, is_return): Key,
        symbols: &[Symbol],
    ) -> std::ops::Range<usize> {
        let start = self.frames.len();
        let objects = self.objects;
        let module = *self
            .modules
            .entry(object_index(objects, address))
            .or_insert_with_key(|&i| {
                let name = module_name(&objects[i?])?;
                Some(builder.intern_str(&name))
            });
        let lookup = if is_return { address - 1 } else { address };
        for s in symbols {
            let frame = Frame {
                name: self.text(builder, &s.name),
                file: s.file.as_ref().map(|f| self.text(builder, f)),
                line: s.line,
                module,
                address: Some(lookup),
                inlined: s.inlined,
            };
            let trim = (self.cut.leaf)(&s.name, s.file.as_deref());
            self.frames.push((builder.intern_frame_ids(frame), trim));
        }
        start..self.frames.len()
    }

    /// `text` interned, once for each place it lies.
    fn text(&mut self, builder: &mut SessionBuilder, text: &Arc<str>) -> StrId {
        *self
            .texts
            .entry((text.as_ptr() as usize, text.len()))
            .or_insert_with(|| builder.intern_str(text))
    }

    /// Where the walk of a stack of `n` addresses (the one at `depth` from the root: `key`)
    /// starts: at the innermost address with a frame [`Cut::root`] matches, unless no frame
    /// would be left. Resolves its addresses from the leaf up to that one, and no further.
    fn start(
        &mut self,
        builder: &mut SessionBuilder,
        n: usize,
        key: impl Fn(usize) -> Key,
    ) -> Start {
        let mut leafward = 0;
        for depth in (0..n).rev() {
            let resolved = self.resolve(builder, key(depth));
            let kept = resolved.range.len();
            if resolved.first > 0 {
                return if kept + leafward == 0 {
                    Start::Whole
                } else {
                    Start::From(depth)
                };
            }
            leafward += kept;
        }
        Start::From(0)
    }
}

/// Where the walk of a stack stood after one of its addresses (root first), all its frames
/// interned: the address and whether it is a return address, and the stack interned so far.
struct Level {
    key: Key,
    node: Option<StackId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frames of `stack` (leaf first) as the walk without shared prefixes made them: names
    /// root first, cut at the root end past `max_depth`, then before the run of names `trim`
    /// matches that ends it (keeping at least one frame).
    fn expected(stack: &[u64], max_depth: usize, trim: &dyn Fn(&str) -> bool) -> Vec<String> {
        let n = stack.len().min(max_depth);
        let mut names: Vec<String> = stack[..n].iter().rev().map(|a| format!("{a:#x}")).collect();
        let run = names.iter().rev().take_while(|name| trim(name)).count();
        let keep = (names.len() - run).max(1).min(names.len());
        names.truncate(keep);
        names
    }

    #[test]
    fn stacks_sharing_their_root_end_with_the_previous_one_are_interned_as_on_their_own() {
        // Addresses in no object: named by their hex value, one frame each.
        let stacks: Vec<Box<[u64]>> = [
            &[0x30, 0x20, 0x10][..],
            &[0x31, 0x20, 0x10],
            // The previous stack's prefix, but its leaf is not a return address.
            &[0x20, 0x10],
            &[0x10],
            // Cut before its last two frames.
            &[0x40, 0x50, 0x20, 0x10],
            // Cut at the same place.
            &[0x41, 0x50, 0x20, 0x10],
            // A frame the cut matches, but not at the leaf end: kept, though the stack before
            // was cut there.
            &[0x30, 0x50, 0x20, 0x10],
            // And cut again where the stack before kept it.
            &[0x40, 0x50, 0x20, 0x10],
            &[0x42, 0x51, 0x20, 0x10],
            // Every frame matched: the outermost stays.
            &[0x43, 0x60],
            &[],
            // Deeper than max_depth: cut at the root end.
            &[0x30, 0x21, 0x22, 0x23, 0x24, 0x25, 0x10],
            &[0x30, 0x21, 0x22, 0x23, 0x24, 0x26, 0x10],
            &[0x30, 0x20, 0x10],
        ]
        .iter()
        .map(|s| s.to_vec().into_boxed_slice())
        .collect();
        let trim = |name: &str| ["0x40", "0x41", "0x43", "0x50", "0x60"].contains(&name);
        let leaf = |name: &str, _: Option<&str>| trim(name);
        let max_depth = 5;
        let mut builder = SessionBuilder::default();
        let cut = Cut {
            leaf: &leaf,
            ..Cut::depth(max_depth)
        };
        let ids = intern_stacks(&mut builder, &stacks, &[], AddressSpace::Own, cut);
        let session = builder.finish();
        for (stack, id) in stacks.iter().zip(&ids) {
            let want = expected(stack, max_depth, &trim);
            let mut got: Vec<String> = id
                .map(|id| {
                    session
                        .stack_frames(id)
                        .map(|f| session.frame_name(f).to_owned())
                        .collect()
                })
                .unwrap_or_default();
            got.reverse();
            assert_eq!(got, want, "stack {stack:x?}");
        }
        assert_eq!(ids[0], ids[ids.len() - 1], "one stack, one id");
        assert_ne!(ids[0], ids[1]);
        assert_eq!(ids[4], ids[5], "both cut at the same frame");
        assert_eq!(
            ids[4], ids[7],
            "cut again after a stack that kept the frame"
        );
        // Each distinct (parent, frame) node once.
        let mut nodes: Vec<_> = session.stacks.iter().map(|s| (s.parent, s.frame)).collect();
        let all = nodes.len();
        nodes.sort();
        nodes.dedup();
        assert_eq!(nodes.len(), all);
    }

    #[test]
    fn a_root_cut_leaves_out_the_innermost_frame_it_matches_and_its_callers_interning_neither() {
        // Addresses in no object: named by their hex value, one frame each.
        let stacks: Vec<Box<[u64]>> = [
            &[0x30, 0x20, 0x50, 0x10][..],
            // Shares the kept part of the previous one.
            &[0x31, 0x20, 0x50, 0x10],
            // Two matches: cut at the innermost.
            &[0x32, 0x50, 0x21, 0x50, 0x11],
            // No match: kept whole, and then a stack cut again.
            &[0x30, 0x20, 0x12],
            &[0x30, 0x20, 0x50, 0x10],
            // The match is the leaf: nothing would be left, so kept whole.
            &[0x50, 0x13],
            // The match lies past max_depth: kept whole, as deep as that.
            &[0x33, 0x20, 0x22, 0x23, 0x24, 0x50, 0x14],
            &[],
        ]
        .iter()
        .map(|s| s.to_vec().into_boxed_slice())
        .collect();
        let want: [&[&str]; 8] = [
            &["0x20", "0x30"],
            &["0x20", "0x31"],
            &["0x32"],
            &["0x12", "0x20", "0x30"],
            &["0x20", "0x30"],
            &["0x13", "0x50"],
            &["0x24", "0x23", "0x22", "0x20", "0x33"],
            &[],
        ];
        let root = |name: &str| name == "0x50";
        let mut builder = SessionBuilder::default();
        let cut = Cut {
            root: Some(&root),
            ..Cut::depth(5)
        };
        let ids = intern_stacks(&mut builder, &stacks, &[], AddressSpace::Own, cut);
        let session = builder.finish();
        let mut used = std::collections::HashSet::new();
        for ((stack, id), want) in stacks.iter().zip(&ids).zip(want) {
            let mut got: Vec<&str> = Vec::new();
            let mut node = *id;
            while let Some(n) = node {
                used.insert(n);
                got.push(session.frame_name(session.stack(n).frame));
                node = session.stack(n).parent;
            }
            got.reverse();
            assert_eq!(got, want, "stack {stack:x?}");
        }
        assert_eq!(ids[0], ids[4], "one stack, one id");
        // Nothing of the parts cut was interned: no stack that no stack kept goes through, no
        // frame only they had.
        assert_eq!(used.len(), session.stacks.len());
        let names: Vec<&str> = (0..session.frames.len())
            .map(|f| session.frame_name(FrameId(f as u32)))
            .collect();
        for gone in ["0x10", "0x11", "0x21", "0x14"] {
            assert!(!names.contains(&gone), "{gone} in {names:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 64,
            ..Default::default()
        })]

        #[test]
        fn symbols_resolved_on_a_second_thread_make_the_session_resolved_here_does(
            // Stacks of up to 12 frames over 40 addresses (in no object: named by their
            // value), some repeated, some sharing root ends, some deeper than max_depth.
            picks in proptest::collection::vec(
                proptest::collection::vec(0u64..40, 0..12),
                0..300,
            ),
        ) {
            let stacks: Vec<Box<[u64]>> = picks
                .iter()
                .map(|s| s.iter().map(|i| 0x1000 + 0x10 * i).collect())
                .collect();
            threaded_and_inline_agree(&stacks);
        }
    }

    /// Interning `stacks` with a resolving thread makes the session resolving inline makes (with
    /// a root cut too, which asks for addresses leaf first), and the thread sends each address
    /// the walk needs once.
    fn threaded_and_inline_agree(stacks: &[Box<[u64]>]) {
        let trim = |name: &str, _: Option<&str>| name == "0x1050" || name == "0x1060";
        let root = |name: &str| name == "0x1090";
        let session = |threaded: bool, root: Option<&dyn Fn(&str) -> bool>| {
            let mut builder = SessionBuilder::default();
            let cut = Cut {
                leaf: &trim,
                root,
                ..Cut::depth(9)
            };
            let ids = intern_with(&mut builder, stacks, &[], AddressSpace::Own, cut, threaded);
            (ids, builder.finish())
        };
        assert_eq!(session(true, None), session(false, None));
        assert_eq!(session(true, Some(&root)), session(false, Some(&root)));
        // The thread sent each address the walk needs, once: none was left to resolve here.
        let (tx, rx) = std::sync::mpsc::channel();
        resolve_in_walk_order(stacks, &[], AddressSpace::Own, 9, &tx);
        drop(tx);
        let sent: Vec<Key> = rx.iter().map(|(key, _)| key).collect();
        let mut all: Vec<Key> = stacks
            .iter()
            .flat_map(|s| {
                let n = s.len().min(9);
                (0..n).map(move |i| (s[i], i > 0))
            })
            .collect();
        all.sort_unstable();
        all.dedup();
        let mut distinct = sent.clone();
        distinct.sort_unstable();
        assert_eq!(distinct, all);
        assert_eq!(sent.len(), all.len(), "each once");
    }
}
