//! Host memory a timing child keeps between the jobs it serves: inputs drawn from a seed (every job of a group draws the same ones) and the host buffers of earlier downloads (faulting in fresh memory costs about 0.3 s a GiB).

use std::sync::Arc;

use crate::verify::{ElemType, HostData, Init};

/// How much host memory each kind of kept data may hold. A draw or a buffer still in use by the
/// job stays alive through its own handle when it is dropped from here.
const BUDGET_BYTES: usize = 4 << 30;

/// What identifies an input draw: the same key gives the same data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Draw {
    elem: ElemType,
    len: usize,
    init: Init,
    seed: u64,
}

/// The kept draws (oldest first) and spare download buffers.
#[derive(Default)]
pub(super) struct HostCache {
    draws: Vec<(Draw, Arc<HostData>)>,
    spares: Vec<HostData>,
}

impl HostCache {
    /// The data `HostData::init(elem, len, init, seed)` gives, drawn once while it is kept.
    pub(super) fn draw(
        &mut self,
        elem: ElemType,
        len: usize,
        init: Init,
        seed: u64,
    ) -> Arc<HostData> {
        let key = Draw {
            elem,
            len,
            init,
            seed,
        };
        if let Some(at) = self.draws.iter().position(|(k, _)| *k == key) {
            let kept = self.draws.remove(at);
            let data = kept.1.clone();
            self.draws.push(kept);
            return data;
        }
        let data = Arc::new(HostData::init(elem, len, init, seed));
        self.draws.push((key, data.clone()));
        while self.draws.len() > 1
            && bytes(self.draws.iter().map(|(_, d)| d.as_ref())) > BUDGET_BYTES
        {
            self.draws.remove(0);
        }
        data
    }

    /// A host buffer of `len` elements of `elem`'s width, from an earlier download where one fits
    /// (its contents are to be overwritten), else fresh.
    pub(super) fn spare(&mut self, elem: ElemType, len: usize) -> HostData {
        self.take_spare(len, len * elem.size())
            .unwrap_or_else(|| HostData::zeroed(elem, len))
    }

    fn take_spare(&mut self, len: usize, bytes: usize) -> Option<HostData> {
        let at = self
            .spares
            .iter()
            .position(|d| d.len() == len && d.as_bytes().len() == bytes)?;
        Some(self.spares.remove(at))
    }

    /// Keeps a download's host buffer for a later job (the newest kept first, within the budget).
    pub(super) fn keep_spare(&mut self, data: HostData) {
        self.spares.insert(0, data);
        while self.spares.len() > 1 && bytes(self.spares.iter()) > BUDGET_BYTES {
            self.spares.pop();
        }
    }
}

fn bytes<'a>(data: impl Iterator<Item = &'a HostData>) -> usize {
    data.map(|d| d.as_bytes().len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_draw_is_handed_out_once_drawn_and_equals_a_fresh_one() {
        let mut cache = HostCache::default();
        let a = cache.draw(ElemType::F32, 1000, Init::Random, 7);
        let b = cache.draw(ElemType::F32, 1000, Init::Random, 7);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(*a, HostData::init(ElemType::F32, 1000, Init::Random, 7));
        let other = cache.draw(ElemType::F32, 1000, Init::Random, 8);
        assert_ne!(*other, *a);
        assert_eq!(cache.draws.len(), 2);
    }

    #[test]
    fn a_spare_is_reused_only_for_the_same_width_and_length() {
        let mut cache = HostCache::default();
        cache.keep_spare(HostData::zeroed(ElemType::F32, 64));
        assert_eq!(cache.spare(ElemType::F64, 64).as_bytes().len(), 512);
        assert_eq!(cache.spares.len(), 1, "an f64 buffer is not an f32 one");
        assert_eq!(cache.spare(ElemType::U32, 64).as_bytes().len(), 256);
        assert!(cache.spares.is_empty());
    }
}
