//! A map from the boundary's numeric ids to their state: a `Vec` kept sorted by id.
//!
//! The boundary keeps four such tables (inspect guards, inbox guards, mounts,
//! registry attachments). Ids are handed out in increasing order, so an insert
//! is a push and a lookup a binary search. One small generic type in place of
//! four `HashMap` instantiations keeps hashbrown's rehashing code out of the
//! `.wasm` (0.5 KB gzipped, measured by building with and without it).

/// The id after `id` among `1..=mask` (`mask` is `2^k - 1`, the ids' bits):
/// masked first, then 0 skipped, so after `mask` it wraps to 1, never to 0 (the
/// id of nothing installed).
pub const fn next_id(id: u32, mask: u32) -> u32 {
    let next = id.wrapping_add(1) & mask;
    if next == 0 {
        1
    } else {
        next
    }
}

/// Values by `u32` id, in id order: the ids and the values in two `Vec`s side
/// by side, so the search over the ids is one function for every `T` (not one
/// copy per table).
#[derive(Debug)]
pub struct IdMap<T> {
    ids: Vec<u32>,
    values: Vec<T>,
}

impl<T> Default for IdMap<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Where `id` is in `ids` (sorted), or where it would go.
fn find(ids: &[u32], id: u32) -> Result<usize, usize> {
    ids.binary_search(&id)
}

impl<T> IdMap<T> {
    /// An empty map (a `const fn`: a thread-local of one needs no lazy start).
    pub const fn new() -> Self {
        IdMap {
            ids: Vec::new(),
            values: Vec::new(),
        }
    }

    /// The value under `id`.
    pub fn get(&self, id: u32) -> Option<&T> {
        let i = find(&self.ids, id).ok()?;
        self.values.get(i)
    }

    /// The value under `id`, to change.
    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        let i = find(&self.ids, id).ok()?;
        self.values.get_mut(i)
    }

    /// Whether `id` has a value.
    pub fn contains(&self, id: u32) -> bool {
        find(&self.ids, id).is_ok()
    }

    /// Put `value` under `id`; returns the value it replaced.
    pub fn insert(&mut self, id: u32, value: T) -> Option<T> {
        match find(&self.ids, id) {
            Ok(i) => self.values.get_mut(i).map(|v| std::mem::replace(v, value)),
            Err(i) => {
                self.ids.insert(i, id);
                self.values.insert(i, value);
                None
            }
        }
    }

    /// Take the value under `id` out.
    pub fn remove(&mut self, id: u32) -> Option<T> {
        let i = find(&self.ids, id).ok()?;
        self.ids.remove(i);
        Some(self.values.remove(i))
    }

    /// How many ids have a value.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no id has a value.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_wrap_to_1_never_to_0() {
        let mask = u32::MAX >> 5;
        assert_eq!(next_id(1, mask), 2);
        assert_eq!(next_id(mask - 1, mask), mask);
        assert_eq!(next_id(mask, mask), 1, "the wrap skips 0");
        assert_eq!(
            next_id(u32::MAX, mask),
            1,
            "an id beyond the mask wraps too"
        );
        assert_eq!(next_id(u32::MAX, u32::MAX), 1);
    }

    #[test]
    fn insert_get_replace_and_remove_in_any_order() {
        let mut m = IdMap::default();
        assert!(m.is_empty());
        for id in [5, 1, 9, 3, 7] {
            assert_eq!(m.insert(id, id * 10), None);
        }
        assert_eq!(m.len(), 5);
        assert!(!m.is_empty());
        assert_eq!(m.ids, [1, 3, 5, 7, 9]);
        assert_eq!(m.values, [10, 30, 50, 70, 90]);
        assert_eq!(m.get(7), Some(&70));
        assert_eq!(m.get(4), None);
        assert_eq!(m.insert(7, 71), Some(70));
        if let Some(v) = m.get_mut(3) {
            *v = 31;
        }
        assert_eq!(m.get(3), Some(&31));
        assert!(m.contains(9) && !m.contains(8));
        assert_eq!(m.remove(5), Some(50));
        assert_eq!(m.remove(5), None);
        assert_eq!(m.get(9), Some(&90));
        assert_eq!(m.len(), 4);
        for id in [1, 3, 7, 9] {
            assert!(m.remove(id).is_some());
        }
        assert!(m.is_empty());
    }

    #[test]
    fn agrees_with_a_std_map_over_a_long_mixed_sequence() {
        let mut m = IdMap::default();
        let mut reference = std::collections::BTreeMap::new();
        let mut x: u32 = 12345;
        for step in 0..20_000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let id = (x >> 16) % 97;
            match x % 4 {
                0 | 1 => assert_eq!(m.insert(id, step), reference.insert(id, step)),
                2 => assert_eq!(m.remove(id), reference.remove(&id)),
                _ => assert_eq!(m.get(id), reference.get(&id)),
            }
            assert_eq!(m.len(), reference.len());
        }
    }
}
