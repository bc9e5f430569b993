//! The loaded objects a collector watches: when the loader's counters change it reads the
//! objects again, installs a new DWARF unwinder over them for the handlers, and lists every
//! object seen for symbolization. The CPU and the allocation collectors share it.

use crate::symbolize::LoadedObject;
use crate::sys;

/// What a collector knows of the loaded objects between two looks.
pub struct ObjectWatch {
    /// The unwind tables, kept across sessions: taken from the process at start and given back
    /// when the watch is dropped (see `dwarf::Modules::kept`).
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    modules: crate::unwind::dwarf::Modules,
    /// The loader's counters at the last look; `u64::MAX` before the first.
    loader_counters: (u64, u64),
}

impl Default for ObjectWatch {
    fn default() -> Self {
        ObjectWatch::new()
    }
}

impl ObjectWatch {
    /// A watch that has not looked yet: its first [`ObjectWatch::refresh`] reads the objects.
    pub fn new() -> ObjectWatch {
        ObjectWatch {
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            modules: crate::unwind::dwarf::Modules::kept(),
            loader_counters: (u64::MAX, u64::MAX),
        }
    }

    /// Reads the loaded objects when they changed since the last look, installs a new unwinder
    /// over them in `dwarf`, and adds those not seen before to `seen`. Every object seen stays
    /// listed (the newest last), so that addresses in one unloaded before stop are still
    /// resolved from its file. Then frees the unwinders no handler uses any more.
    pub fn refresh(
        &mut self,
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))] dwarf: &sys::Rcu<
            crate::unwind::dwarf::DwarfSet,
        >,
        seen: &mut Vec<LoadedObject>,
    ) {
        if sys::loader_counters() != self.loader_counters {
            let (objects, counters) = sys::loaded_objects();
            self.loader_counters = counters;
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            dwarf.replace(Some(Box::new(self.modules.refresh(&objects))));
            for object in objects {
                if !seen.contains(&object) {
                    seen.push(object);
                }
            }
        }
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        dwarf.reclaim();
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl Drop for ObjectWatch {
    fn drop(&mut self) {
        std::mem::take(&mut self.modules).keep();
    }
}
