//! Weights per machine instruction of one function, over the samples a view selects: the
//! viewer's Assembly view. The instructions themselves come from the binary (read by `prof
//! serve`); this module only sums the samples by the address their frames carry and then
//! charges each address to the instruction that holds it.
//!
//! An address is kept as the file it lies in and its offset there (a mapping of the session
//! and `offset + (address - start)`), not as the address itself: two processes of one program
//! load it at different addresses, and their samples of one instruction must meet. As in
//! [`function_lines`](super::function_lines), an address's self weight is the weight of the
//! samples whose (transformed) leaf is the function, charged to the address of its innermost
//! frame (the sampled instruction itself when the function is the real leaf, the call it was
//! in otherwise); its total counts each sample once if the address is among the function's
//! frames of its stack. A caller's frame carries its return address less one, which lies inside
//! the call instruction: hence "the instruction that holds it", not "the one that starts there".

use super::filter::StackWeights;
use super::lines::function_stacks;
use super::transform::Transform;
use crate::session::{Session, StrId};

/// Self and total weights with their sample counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleWeights {
    /// Weight of the samples charged here as their leaf.
    pub self_weight: u64,
    /// How many samples that is.
    pub self_samples: u64,
    /// Weight of the samples with this place among the function's frames (each sample once).
    pub total: u64,
    /// How many samples that is.
    pub total_samples: u64,
}

impl SampleWeights {
    fn add(&mut self, other: &SampleWeights) {
        self.self_weight = self.self_weight.saturating_add(other.self_weight);
        self.self_samples = self.self_samples.saturating_add(other.self_samples);
        self.total = self.total.saturating_add(other.total);
        self.total_samples = self.total_samples.saturating_add(other.total_samples);
    }
}

/// Where a sampled address lies: a file of the session's mappings and the offset in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CodePlace {
    /// The session's mapping of the file (of the mappings that name the same file and build ID,
    /// the first), or `None` when no mapping holds the address.
    pub mapping: Option<usize>,
    /// The offset in that file, or the address itself when no mapping holds it.
    pub offset: u64,
}

/// The weights at one place of a function's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressWeights {
    /// Where.
    pub place: CodePlace,
    /// How much.
    pub weights: SampleWeights,
}

/// The weights of function `func` (its name's string id) at each address its frames carry,
/// over the samples of `weights` that `transforms` keep and whose transformed stack still passes
/// through `func`, in the order of their places (mapping, then offset). Frames without an
/// address (imported from formats without them) count nowhere. The self weights add up to the
/// function's self weight in the call tree, less the samples whose frame has no address.
pub fn function_addresses(
    session: &Session,
    weights: &StackWeights,
    transforms: &[Transform],
    func: StrId,
) -> Vec<AddressWeights> {
    // Each stack's addresses of the function once (its frames in one stack are few, so a short
    // list beats a set), then summed by address and by place: sorted and merged, through the
    // core's one sort, which keeps the wasm module from holding a hash map and a sort more.
    let mut parts: Vec<(u64, SampleWeights)> = Vec::new();
    let mut seen: Vec<u64> = Vec::new();
    function_stacks(
        session,
        weights,
        transforms,
        func,
        &mut |stack, weight, count, is_self| {
            seen.clear();
            let mut charge_self = is_self;
            for frame in session.stack_frames(stack) {
                let frame = session.frame(frame);
                if frame.name != func {
                    continue;
                }
                let own = std::mem::take(&mut charge_self);
                let Some(address) = frame.address else {
                    continue;
                };
                let mut cell = SampleWeights::default();
                if own {
                    (cell.self_weight, cell.self_samples) = (weight, count);
                }
                if !seen.contains(&address) {
                    seen.push(address);
                    (cell.total, cell.total_samples) = (weight, count);
                }
                parts.push((address, cell));
            }
        },
    );
    let by_address = merged(parts, |&(address, _)| address, |a, b| a.1.add(&b.1));
    // Then by place: the addresses of one instruction in several processes meet.
    let places = (by_address.into_iter())
        .map(|(address, weights)| AddressWeights {
            place: place_of(session, address),
            weights,
        })
        .collect();
    merged(places, |a| a.place, |a, b| a.weights.add(&b.weights))
}

/// `items` sorted by `key`, those of equal keys merged into the first by `merge`.
fn merged<T, K: Ord>(
    mut items: Vec<T>,
    key: impl Fn(&T) -> K,
    merge: impl Fn(&mut T, &T),
) -> Vec<T> {
    crate::order::sort_by_key(&mut items, &key);
    let mut out: Vec<T> = Vec::with_capacity(items.len());
    for item in items {
        match out.last_mut() {
            Some(last) if key(last) == key(&item) => merge(last, &item),
            _ => out.push(item),
        }
    }
    out
}

/// Where `address` lies: in the file of the first of the session's mappings that holds it
/// (named by the first mapping of that file and build ID), or nowhere.
fn place_of(session: &Session, address: u64) -> CodePlace {
    let mappings = &session.mappings;
    let holding = mappings
        .iter()
        .find(|m| m.start <= address && address < m.limit);
    match holding {
        Some(m) => CodePlace {
            mapping: mappings
                .iter()
                .position(|t| t.path == m.path && t.build_id == m.build_id),
            offset: m.offset.saturating_add(address - m.start),
        },
        None => CodePlace {
            mapping: None,
            offset: address,
        },
    }
}

/// The place to show the code of: the heaviest by self weight (the instruction most samples
/// were taken at), then by total, of the places in a mapping; `None` when no address of the
/// function lies in one.
pub fn hottest_place(addresses: &[AddressWeights]) -> Option<CodePlace> {
    addresses
        .iter()
        .filter(|a| a.place.mapping.is_some())
        .max_by(|a, b| {
            let key = |w: &AddressWeights| (w.weights.self_weight, w.weights.total);
            // Of equal ones, the first.
            key(a).cmp(&key(b)).then_with(|| b.place.cmp(&a.place))
        })
        .map(|a| a.place)
}

/// The weights of a function's instructions: one cell per instruction, and what lies outside
/// them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstructionWeights {
    /// One per instruction, in the order given.
    pub instructions: Vec<SampleWeights>,
    /// The function's samples at places no instruction holds (another symbol it was inlined
    /// into, another binary, an address in no mapping, the part of a long function not shown).
    pub outside: SampleWeights,
    /// Of the instructions, the one with the most self weight (then total), when any has weight.
    pub hottest: Option<usize>,
}

/// Charges `addresses` (from [`function_addresses`]) to the instructions of the code shown:
/// those in the file of `mapping` starting at the offsets `starts` (ascending), the last one
/// ending at `end`. An address belongs to the instruction that holds it (the last one starting
/// at or before it), so a caller's return address less one counts at its call.
pub fn instruction_weights(
    addresses: &[AddressWeights],
    mapping: usize,
    starts: &[u64],
    end: u64,
) -> InstructionWeights {
    let mut out = InstructionWeights {
        instructions: vec![SampleWeights::default(); starts.len()],
        ..InstructionWeights::default()
    };
    for a in addresses {
        let offset = a.place.offset;
        let at = starts.partition_point(|&s| s <= offset);
        let inside = a.place.mapping == Some(mapping) && at > 0 && offset < end;
        match out.instructions.get_mut(at.wrapping_sub(1)) {
            Some(cell) if inside => cell.add(&a.weights),
            _ => out.outside.add(&a.weights),
        }
    }
    out.hottest = (out.instructions.iter().enumerate())
        .filter(|(_, w)| w.total > 0 || w.self_weight > 0)
        .max_by(|(i, a), (j, b)| {
            (a.self_weight, a.total)
                .cmp(&(b.self_weight, b.total))
                .then_with(|| j.cmp(i))
        })
        .map(|(i, _)| i);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::{CallTree, Filter, NodeId};
    use crate::session::{FrameSpec, MappingSpec, SessionBuilder, ThreadIdx};

    /// Two processes' loads of `app` (build ID `ab`): at 0x1000 (file offset 0x400) and at
    /// 0x9000 (the same segment). `main` calls `work`, which is sampled at three instructions:
    /// `work@0x1010` 5 ms and `work@0x9010` 2 ms (one instruction, file offset 0x410), and
    /// `work@0x1014` 1 ms; `work@0x1020` (its call, return address less one) calls `hash`
    /// (leaf, 3 ms); `work@0x50` lies in no mapping (4 ms); an imported `work` frame has no
    /// address (6 ms). Samples of 1 ms; thread 0 but for the 2 ms at 0x9010 (thread 1).
    fn session() -> (Session, StrId) {
        let mut b = SessionBuilder::default();
        for start in [0x1000, 0x9000] {
            b.push_mapping(&MappingSpec {
                start,
                limit: start + 0x1000,
                offset: 0x400,
                path: "/bin/app",
                build_id: Some("ab"),
            });
        }
        let at = |name, address| FrameSpec {
            name,
            address: Some(address),
            ..FrameSpec::default()
        };
        let main = b.intern_frame(&at("main", 0x1100));
        let hash = b.intern_frame(&at("hash", 0x1200));
        let t0 = b.thread(1, "main");
        let t1 = b.thread(2, "other");
        let mut time = 0;
        let mut push = |b: &mut SessionBuilder, path: &[_], thread, n| {
            let stack = b.intern_stack_path(path).unwrap();
            for _ in 0..n {
                b.push_sample(stack, thread, time, 1_000_000);
                time += 1;
            }
        };
        let work = |b: &mut SessionBuilder, a| b.intern_frame(&at("work", a));
        let (w10, w9010, w14, w20, w50) = (
            work(&mut b, 0x1010),
            work(&mut b, 0x9010),
            work(&mut b, 0x1014),
            work(&mut b, 0x1020),
            work(&mut b, 0x50),
        );
        let bare = b.intern_frame(&FrameSpec::named("work"));
        push(&mut b, &[main, w10], t0, 5);
        push(&mut b, &[main, w9010], t1, 2);
        push(&mut b, &[main, w14], t0, 1);
        push(&mut b, &[main, w20, hash], t0, 3);
        push(&mut b, &[main, w50], t0, 4);
        push(&mut b, &[main, bare], t0, 6);
        let session = b.finish();
        let work = session
            .frames
            .iter()
            .find(|f| session.str(f.name) == "work");
        let work = work.unwrap().name;
        (session, work)
    }

    const MS: u64 = 1_000_000;

    fn cell(self_ms: u64, total_ms: u64) -> SampleWeights {
        SampleWeights {
            self_weight: self_ms * MS,
            self_samples: self_ms,
            total: total_ms * MS,
            total_samples: total_ms,
        }
    }

    fn all(session: &Session) -> StackWeights {
        StackWeights::compute(session, &Filter::all())
    }

    #[test]
    fn one_instruction_of_two_processes_meets_at_its_file_offset() {
        let (session, work) = session();
        let got = function_addresses(&session, &all(&session), &[], work);
        let mapped = |offset| CodePlace {
            mapping: Some(0),
            offset,
        };
        let at = |place: CodePlace| {
            got.iter()
                .find(|a| a.place == place)
                .map(|a| a.weights)
                .unwrap_or_else(|| panic!("{place:?} in {got:?}"))
        };
        assert_eq!(at(mapped(0x410)), cell(5 + 2, 5 + 2));
        assert_eq!(at(mapped(0x414)), cell(1, 1));
        // The call to hash: no self weight (hash is the leaf), its total.
        assert_eq!(at(mapped(0x420)), cell(0, 3));
        let unmapped = CodePlace {
            mapping: None,
            offset: 0x50,
        };
        assert_eq!(at(unmapped), cell(4, 4));
        assert_eq!(got.len(), 4, "the frame without an address counts nowhere");
        assert_eq!(hottest_place(&got), Some(mapped(0x410)));
    }

    #[test]
    fn the_filter_and_transforms_choose_the_samples() {
        let (session, work) = session();
        let thread0 = StackWeights::compute(&session, &Filter::all().threads([ThreadIdx(0)]));
        let got = function_addresses(&session, &thread0, &[], work);
        let hot = got.iter().find(|a| a.place.offset == 0x410).unwrap();
        assert_eq!(hot.weights, cell(5, 5), "thread 1's 2 ms left out");
        // Merging hash charges its 3 ms to the call in work as self weight.
        let hash = session
            .frames
            .iter()
            .find(|f| session.str(f.name) == "hash");
        let merged = [Transform::Merge(hash.unwrap().name)];
        let got = function_addresses(&session, &all(&session), &merged, work);
        let call = got.iter().find(|a| a.place.offset == 0x420).unwrap();
        assert_eq!(call.weights, cell(3, 3));
    }

    #[test]
    fn the_addresses_self_weights_add_up_to_the_call_trees_less_the_frames_without_one() {
        let (session, work) = session();
        let weights = all(&session);
        let tree = CallTree::build(&session, &weights, &[]);
        let tree_self: u64 = (0..tree.len())
            .map(|i| NodeId(i as u32))
            .filter(|&n| n != tree.root() && tree.func(n) == work)
            .map(|n| tree.self_weight(n))
            .sum();
        let got = function_addresses(&session, &weights, &[], work);
        let sum: u64 = got.iter().map(|a| a.weights.self_weight).sum();
        assert_eq!(sum + 6 * MS, tree_self);
    }

    #[test]
    fn each_address_is_charged_to_the_instruction_that_holds_it() {
        let (session, work) = session();
        let got = function_addresses(&session, &all(&session), &[], work);
        // Instructions at 0x40c (4 bytes), 0x410 (4), 0x414 (0xb: up to the call's end at
        // 0x41f), 0x41f (5: the call, holding 0x420), ending at 0x424.
        let shown = instruction_weights(&got, 0, &[0x40c, 0x410, 0x414, 0x41f], 0x424);
        assert_eq!(
            shown.instructions,
            [cell(0, 0), cell(7, 7), cell(1, 1), cell(0, 3)]
        );
        assert_eq!(shown.outside, cell(4, 4), "the address in no mapping");
        assert_eq!(shown.hottest, Some(1));
        // Code that ends before the call: the call's weight is outside too.
        let short = instruction_weights(&got, 0, &[0x40c, 0x410, 0x414], 0x418);
        assert_eq!(short.outside, cell(4, 4 + 3));
        // Another file's code holds none of it; nothing at all shown, all is outside.
        let other = instruction_weights(&got, 1, &[0x40c, 0x410], 0x424);
        assert_eq!(other.instructions, [cell(0, 0); 2]);
        assert_eq!(other.hottest, None);
        let none = instruction_weights(&got, 0, &[], 0);
        assert_eq!(none.outside, cell(7 + 1 + 4, 7 + 1 + 3 + 4));
    }
}
