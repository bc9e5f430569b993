//! One stable sort for every slice the core and the viewer sort.
//!
//! The standard library's stable sort is generic over the item type and the comparison, and in
//! wasm32 each pair of them made its own copy of it: about 5 kB each, 110 kB of the viewer's
//! module for some twenty sorts. [`sort_by`] sorts a list of positions (`u32`) through a
//! comparison behind a `dyn` reference, so the module holds the sort once, then moves the
//! items into that order. On other targets, where code size matters less than a call through
//! a pointer per comparison, it is the standard `sort_by`. Both are stable: items that compare
//! equal keep their order.

use std::cmp::Ordering;

/// Sorts `items` stably by `compare` (see the module's docs for why this and not
/// `slice::sort_by`).
pub fn sort_by<T>(items: &mut [T], compare: impl Fn(&T, &T) -> Ordering) {
    if items.len() < 2 {
        return;
    }
    #[cfg(target_arch = "wasm32")]
    {
        let mut order: Vec<u32> = (0..items.len() as u32).collect();
        sort_positions(&mut order, &mut |a: &u32, b: &u32| {
            compare(&items[*a as usize], &items[*b as usize])
        });
        permute(items, &order);
    }
    #[cfg(not(target_arch = "wasm32"))]
    items.sort_by(compare);
}

/// Sorts `items` stably by the key `key` gives each.
pub fn sort_by_key<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> K) {
    sort_by(items, |a, b| key(a).cmp(&key(b)));
}

/// The one instance of the standard sort: positions, through a `dyn` comparison.
#[cfg(any(target_arch = "wasm32", test))]
#[inline(never)]
fn sort_positions(order: &mut [u32], compare: &mut dyn FnMut(&u32, &u32) -> Ordering) {
    order.sort_by(compare);
}

/// Puts into place `k` the item that was at `order[k]` (`order` is a permutation of the
/// positions), by swaps along each cycle of the permutation.
#[cfg(any(target_arch = "wasm32", test))]
fn permute<T>(items: &mut [T], order: &[u32]) {
    let mut done = vec![false; items.len()];
    for start in 0..items.len() {
        if done[start] {
            continue;
        }
        let mut at = start;
        loop {
            done[at] = true;
            let from = order[at] as usize;
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wasm32 path (positions, then the permutation) on this target: the same order as the
    /// standard stable sort, ties included.
    #[test]
    fn sorting_positions_then_permuting_is_the_standard_stable_sort() {
        let mut seed = 7u64;
        for len in [0usize, 1, 2, 3, 10, 33, 257, 1000] {
            let items: Vec<(u8, usize)> = (0..len)
                .map(|i| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((seed >> 60) as u8, i)
                })
                .collect();
            let mut expected = items.clone();
            expected.sort_by_key(|x| x.0);
            let mut got = items.clone();
            let mut order: Vec<u32> = (0..len as u32).collect();
            sort_positions(&mut order, &mut |a, b| {
                items[*a as usize].0.cmp(&items[*b as usize].0)
            });
            permute(&mut got, &order);
            assert_eq!(got, expected, "length {len}");
            let mut public = items.clone();
            sort_by_key(&mut public, |x| x.0);
            assert_eq!(public, expected, "length {len}");
        }
    }
}
