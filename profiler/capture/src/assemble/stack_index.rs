//! The index of the distinct stacks a collector stores: each stack is kept once, in the
//! collector's list, and the index holds only its position in that list, found by the stack's
//! hash and compared against the list. (A map from stacks to positions would keep every stack
//! twice: once as the key, once in the list.)

use hashbrown::hash_table::{Entry, HashTable};
use std::hash::{BuildHasher, RandomState};

/// Positions in a list of stacks, by content (see the module's documentation).
#[derive(Default)]
pub struct StackIndex {
    table: HashTable<u32>,
    hasher: RandomState,
}

impl StackIndex {
    /// The position of `stack` in `stacks`, where it is added when new. `stacks` must be the
    /// list this index was always given, only ever appended to by this call.
    pub fn intern(&mut self, stacks: &mut Vec<Box<[u64]>>, stack: &[u64]) -> u32 {
        let hasher = &self.hasher;
        let entry = self.table.entry(
            hasher.hash_one(stack),
            |&i| *stacks[i as usize] == *stack,
            |&i| hasher.hash_one(&*stacks[i as usize]),
        );
        match entry {
            Entry::Occupied(found) => *found.get(),
            Entry::Vacant(slot) => {
                let i = u32::try_from(stacks.len()).expect("fewer than 2^32 distinct stacks");
                stacks.push(stack.into());
                slot.insert(i);
                i
            }
        }
    }

    /// Bytes the index itself holds (its table), not counting the stacks.
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        self.table.allocation_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_distinct_stack_is_stored_once_and_found_again() {
        let mut index = StackIndex::default();
        let mut stacks = Vec::new();
        let given: Vec<Vec<u64>> = (0..5000u64)
            .map(|i| (0..i % 50).map(|d| d * 7 + i % 1000).collect())
            .collect();
        let ids: Vec<u32> = given.iter().map(|s| index.intern(&mut stacks, s)).collect();
        // Stacks repeat every 1000 (the empty one every 50).
        let distinct: std::collections::HashSet<&Vec<u64>> = given.iter().collect();
        assert_eq!(stacks.len(), distinct.len());
        for (s, &id) in given.iter().zip(&ids) {
            assert_eq!(&*stacks[id as usize], s.as_slice());
            assert_eq!(index.intern(&mut stacks, s), id, "found, not added again");
        }
        assert_eq!(stacks.len(), distinct.len());
        // The index holds positions only: a few bytes a stack, not the stacks' addresses.
        let addresses: usize = stacks.iter().map(|s| s.len() * 8).sum();
        assert!(
            index.heap_bytes() < 16 * stacks.len(),
            "index {} bytes for {} stacks ({addresses} bytes of addresses)",
            index.heap_bytes(),
            stacks.len()
        );
    }
}
