//! Theoretical occupancy (pure): how many blocks of a kernel fit on one SM under each of its limits (warp slots, block slots, registers, shared memory) and which limit is the smallest, computed as CUDA's occupancy calculator (`cuda_occupancy.h`) does for compute capability 7.0 and later.
//!
//! The child asks the driver too (`cuOccupancyMaxActiveBlocksPerMultiprocessor`) and records
//! both answers; reports show the driver's number and name this model's limiter, and say so where
//! the two disagree. Occupancy is a prediction of how many warps *can* be resident, not of speed:
//! the occupancy suite (`kernels/occupancy`) puts it beside the measured time.

use serde::{Deserialize, Serialize};

/// What limits how many blocks of a kernel are resident on one SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    /// The SM's warp slots over the block's warps (none fit when the block is larger than the
    /// kernel's `__launch_bounds__` or the device allow).
    Warps,
    /// The SM's block slots (32 on Hopper).
    Blocks,
    /// The register file: registers are allocated per warp, in units, in each SM sub-partition.
    Registers,
    /// Shared memory: static + dynamic + the driver's reservation per block, in allocation units.
    SharedMemory,
}

impl Limiter {
    /// How reports name it (ncu says "Block Limit Warps / SM / Registers / Shared Mem").
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Warps => "warps",
            Limiter::Blocks => "blocks",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
        }
    }
}

/// One SM's limits, as the CUDA device attributes give them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmLimits {
    /// Major and minor compute capability: the allocation rules depend on it.
    pub compute_capability: [u32; 2],
    pub warp_size: u32,
    pub max_threads_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub max_threads_per_block: u32,
    pub registers_per_sm: u32,
    pub registers_per_block: u32,
    pub shared_bytes_per_sm: u32,
    /// Shared memory a block may use without opting in (48 KiB).
    pub shared_bytes_per_block: u32,
    /// Shared memory a block may use after raising the kernel's maximum dynamic size.
    pub shared_bytes_per_block_optin: u32,
    /// Shared memory the driver keeps for itself in every block (1 KiB since Ampere).
    pub reserved_shared_bytes_per_block: u32,
}

impl SmLimits {
    /// An H100 or H200 SM (compute capability 9.0), as their device attributes read: 2048 threads
    /// and 32 blocks per SM, 65536 registers, 228 KiB of shared memory (227 KiB per block after
    /// opting in, 48 KiB before), 1 KiB reserved per block.
    pub fn hopper() -> SmLimits {
        SmLimits {
            compute_capability: [9, 0],
            warp_size: 32,
            max_threads_per_sm: 2048,
            max_blocks_per_sm: 32,
            max_threads_per_block: 1024,
            registers_per_sm: 65536,
            registers_per_block: 65536,
            shared_bytes_per_sm: 228 * 1024,
            shared_bytes_per_block: 48 * 1024,
            shared_bytes_per_block_optin: 227 * 1024,
            reserved_shared_bytes_per_block: 1024,
        }
    }

    /// Warp slots of one SM (0 for limits no device has: a warp size of 0).
    pub fn max_warps(&self) -> u32 {
        self.max_threads_per_sm
            .checked_div(self.warp_size)
            .unwrap_or(0)
    }

    /// Warps a block of `threads` threads occupies (a partial warp takes a whole slot).
    pub fn warps_per_block(&self, threads: u32) -> u32 {
        if self.warp_size == 0 {
            0
        } else {
            threads.div_ceil(self.warp_size)
        }
    }

    /// Active warps of `blocks` resident blocks over the SM's warp slots, in % (`None` for limits
    /// no device has: no warp slots).
    pub fn occupancy_pct(&self, blocks: u32, threads_per_block: u32) -> Option<f64> {
        match self.max_warps() {
            0 => None,
            slots => Some(
                100.0 * (blocks as f64 * self.warps_per_block(threads_per_block) as f64)
                    / slots as f64,
            ),
        }
    }
}

/// How an SM hands out registers and shared memory (`cuda_occupancy.h`'s per-architecture tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationRules {
    /// Registers are given to a warp in multiples of this (256 on every architecture since Kepler).
    pub register_unit: u32,
    /// The most registers one thread may have.
    pub max_registers_per_thread: u32,
    /// The register file is split among this many schedulers (4 since Volta); a warp's registers
    /// come from its own sub-partition.
    pub sub_partitions: u32,
    /// Shared memory is given to a block in multiples of this (256 bytes on Volta and Turing, 128 since Ampere).
    pub shared_unit: u32,
}

impl AllocationRules {
    /// The rules of compute capability `major.minor`: known for 7.x to 12.x (`cuda_occupancy.h`
    /// of CUDA 12.8 lists 8, 9, 10 and 12 with the same units).
    pub fn of(compute_capability: [u32; 2]) -> Result<AllocationRules, OccupancyError> {
        let [major, minor] = compute_capability;
        let shared_unit = match major {
            7 => 256,
            8..=12 => 128,
            _ => return Err(OccupancyError::UnknownArchitecture { major, minor }),
        };
        Ok(AllocationRules {
            register_unit: 256,
            max_registers_per_thread: 255,
            sub_partitions: 4,
            shared_unit,
        })
    }
}

/// What one launch of a kernel asks of an SM: the function's attributes and the launch's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelUse {
    pub threads_per_block: u32,
    pub registers_per_thread: u32,
    pub static_shared_bytes: u32,
    pub dynamic_shared_bytes: u32,
    /// The kernel's own limit on threads per block (`__launch_bounds__`, else the device's).
    pub max_threads_per_block: u32,
    /// The most dynamic shared memory the kernel may be launched with (48 KiB less its static
    /// shared memory, unless raised by `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    pub max_dynamic_shared_bytes: u32,
}

/// Blocks of one launch that fit on an SM under each limit; `None` where a limit does not apply
/// (a kernel that uses no registers, or no shared memory on an architecture that reserves none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockLimits {
    pub warps: u32,
    pub blocks: u32,
    pub registers: Option<u32>,
    pub shared_memory: Option<u32>,
}

impl BlockLimits {
    fn each(&self) -> [(Limiter, Option<u32>); 4] {
        [
            (Limiter::Warps, Some(self.warps)),
            (Limiter::Blocks, Some(self.blocks)),
            (Limiter::Registers, self.registers),
            (Limiter::SharedMemory, self.shared_memory),
        ]
    }

    /// Blocks resident on one SM: the smallest of the limits.
    pub fn active_blocks(&self) -> u32 {
        self.each()
            .iter()
            .filter_map(|(_, n)| *n)
            .min()
            .unwrap_or(0)
    }

    /// Every limit that allows no more than `active_blocks`, warps first, then blocks, registers
    /// and shared memory. The first is the limiter reports name: at a tie the launch's own shape
    /// (warps, blocks) comes before the resources, since a kernel at the SM's warp slots gains
    /// nothing from fewer registers.
    pub fn limiters(&self) -> Vec<Limiter> {
        let active = self.active_blocks();
        self.each()
            .iter()
            .filter(|(_, n)| *n == Some(active))
            .map(|(l, _)| *l)
            .collect()
    }

    /// The limiter reports name (see `limiters`).
    pub fn limiter(&self) -> Limiter {
        self.limiters().first().copied().unwrap_or(Limiter::Warps)
    }
}

/// Why the model cannot answer: input that no device or kernel has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OccupancyError {
    #[error(
        "the occupancy model knows the allocation rules of compute capability 7.0 to 12.x, not {major}.{minor}"
    )]
    UnknownArchitecture { major: u32, minor: u32 },
    #[error("a block of 0 threads has no occupancy")]
    EmptyBlock,
    #[error("device limits that no GPU has: {0}")]
    Device(String),
}

/// Blocks of the launch that fit on one SM under each limit (`cuda_occupancy.h`'s
/// `cudaOccMaxActiveBlocksPerMultiprocessor`, default shared-memory carveout, no partitioned
/// global caching, no block-barrier limit).
pub fn block_limits(sm: &SmLimits, kernel: &KernelUse) -> Result<BlockLimits, OccupancyError> {
    let rules = AllocationRules::of(sm.compute_capability)?;
    if sm.warp_size == 0
        || sm.max_threads_per_sm < sm.warp_size
        || sm.max_blocks_per_sm == 0
        || sm.registers_per_sm == 0
    {
        return Err(OccupancyError::Device(format!(
            "warp size {}, {} threads, {} blocks and {} registers per SM",
            sm.warp_size, sm.max_threads_per_sm, sm.max_blocks_per_sm, sm.registers_per_sm
        )));
    }
    if kernel.threads_per_block == 0 {
        return Err(OccupancyError::EmptyBlock);
    }
    let warps_per_block = sm.warps_per_block(kernel.threads_per_block);
    // A block larger than the device or the kernel's launch bounds allow cannot be resident at all.
    let warps =
        if kernel.threads_per_block > sm.max_threads_per_block.min(kernel.max_threads_per_block) {
            0
        } else {
            sm.max_warps() / warps_per_block
        };
    Ok(BlockLimits {
        warps,
        blocks: sm.max_blocks_per_sm,
        registers: register_limit(sm, &rules, kernel, warps_per_block),
        shared_memory: shared_limit(sm, &rules, kernel),
    })
}

/// Blocks the register file holds: each warp gets its registers rounded up to the unit, from one
/// sub-partition's quarter of the file. The hardware also checks a block against the per-block
/// limit as if its warps were spread over every sub-partition (warps rounded up to a multiple of 4).
fn register_limit(
    sm: &SmLimits,
    rules: &AllocationRules,
    kernel: &KernelUse,
    warps_per_block: u32,
) -> Option<u32> {
    let per_warp = (kernel.registers_per_thread as u64 * sm.warp_size as u64)
        .next_multiple_of(rules.register_unit as u64);
    let assumed_per_block =
        per_warp * (warps_per_block as u64).next_multiple_of(rules.sub_partitions as u64);
    if kernel.registers_per_thread > rules.max_registers_per_thread
        || assumed_per_block > sm.registers_per_block as u64
    {
        return Some(0);
    }
    if per_warp == 0 {
        return None;
    }
    let warps_per_sub_partition = (sm.registers_per_sm / rules.sub_partitions) as u64 / per_warp;
    Some((warps_per_sub_partition * rules.sub_partitions as u64 / warps_per_block as u64) as u32)
}

/// Blocks the SM's shared memory holds: static + dynamic + the reservation, rounded up to the
/// unit, against the whole of the SM's shared memory (the default carveout lets the driver take
/// as much as the launch needs). A block over its own limit (48 KiB, or the opt-in maximum once
/// the kernel's maximum dynamic size was raised past it), or asking for more dynamic shared memory
/// than the kernel allows, fits nowhere.
fn shared_limit(sm: &SmLimits, rules: &AllocationRules, kernel: &KernelUse) -> Option<u32> {
    let fixed = kernel.static_shared_bytes as u64 + sm.reserved_shared_bytes_per_block as u64;
    let allocated =
        (fixed + kernel.dynamic_shared_bytes as u64).next_multiple_of(rules.shared_unit as u64);
    let opted_in = kernel.static_shared_bytes as u64 + kernel.max_dynamic_shared_bytes as u64
        > sm.shared_bytes_per_block as u64;
    let per_block = if opted_in {
        sm.shared_bytes_per_block_optin
    } else {
        sm.shared_bytes_per_block
    } as u64
        + sm.reserved_shared_bytes_per_block as u64;
    if kernel.dynamic_shared_bytes > kernel.max_dynamic_shared_bytes || allocated > per_block {
        return Some(0);
    }
    if allocated == 0 {
        return None;
    }
    Some((sm.shared_bytes_per_sm as u64 / allocated).min(u32::MAX as u64) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launch on Hopper without shared memory: the kernel may use the default 48 KiB.
    fn launch(threads: u32, registers: u32) -> KernelUse {
        KernelUse {
            threads_per_block: threads,
            registers_per_thread: registers,
            static_shared_bytes: 0,
            dynamic_shared_bytes: 0,
            max_threads_per_block: 1024,
            max_dynamic_shared_bytes: 48 * 1024,
        }
    }

    fn on_hopper(k: KernelUse) -> (BlockLimits, u32, f64) {
        let sm = SmLimits::hopper();
        let l = block_limits(&sm, &k).unwrap();
        (
            l,
            l.active_blocks(),
            sm.occupancy_pct(l.active_blocks(), k.threads_per_block)
                .unwrap(),
        )
    }

    #[test]
    fn at_32_registers_256_threads_fill_the_warp_slots() {
        // 64 warp slots / 8 warps = 8 blocks; 32 x 32 = 1024 registers a warp, 16384 / 1024 = 16
        // warps a sub-partition, 64 an SM: 8 blocks too. The warps are named (a tie: the SM is full).
        let (l, active, pct) = on_hopper(launch(256, 32));
        assert_eq!(
            l,
            BlockLimits {
                warps: 8,
                blocks: 32,
                registers: Some(8),
                shared_memory: Some(228)
            }
        );
        assert_eq!((active, pct), (8, 100.0));
        assert_eq!(l.limiters(), vec![Limiter::Warps, Limiter::Registers]);
        assert_eq!(l.limiter(), Limiter::Warps);
    }

    #[test]
    fn at_255_registers_one_block_of_256_threads_fits() {
        // 255 x 32 = 8160, rounded up to 8192 a warp: 2 warps a sub-partition, 8 an SM, 1 block.
        let (l, active, pct) = on_hopper(launch(256, 255));
        assert_eq!((l.registers, active, pct), (Some(1), 1, 12.5));
        assert_eq!(l.limiters(), vec![Limiter::Registers]);
    }

    #[test]
    fn registers_past_the_per_block_limit_fit_nowhere() {
        // 1024 threads x 64 registers: 2048 a warp x 32 warps = the whole file, one block.
        let (l, active, pct) = on_hopper(launch(1024, 64));
        assert_eq!((l.warps, l.registers, active, pct), (2, Some(1), 1, 50.0));
        assert_eq!(l.limiter(), Limiter::Registers);
        // 65 registers: 2080 rounds up to 2304 a warp, 73728 for the block: "too many resources requested".
        let (l, active, pct) = on_hopper(launch(1024, 65));
        assert_eq!((l.registers, active, pct), (Some(0), 0, 0.0));
        assert_eq!(l.limiter(), Limiter::Registers);
    }

    #[test]
    fn one_warp_blocks_run_out_of_block_slots_at_half_occupancy() {
        // Seed 002 §24: "Avoid small block sizes": 32 blocks of one warp are 32 of 64 warp slots.
        let (l, active, pct) = on_hopper(launch(32, 16));
        assert_eq!((l.warps, l.blocks, active, pct), (64, 32, 32, 50.0));
        assert_eq!(l.limiters(), vec![Limiter::Blocks]);
        // A partial warp takes a whole slot: 48 threads are 2 warps.
        assert_eq!(on_hopper(launch(48, 16)).0.warps, 32);
    }

    #[test]
    fn agrees_with_the_limits_ncu_measured_on_hopper() {
        // tests/fixtures/h100/transpose-raw-2048x1024.csv: 256 threads, 16 registers; ncu's
        // launch__occupancy_limit_{warps,blocks,registers} = 8, 32, 16.
        let (l, ..) = on_hopper(launch(256, 16));
        assert_eq!((l.warps, l.blocks, l.registers), (8, 32, Some(16)));
        // tests/fixtures/ncu-h200/raw-import-speedoflight.csv: 1024 threads, 16 registers -> 2, 32, 4.
        let (l, ..) = on_hopper(launch(1024, 16));
        assert_eq!((l.warps, l.blocks, l.registers), (2, 32, Some(4)));
        // (ncu's launch__occupancy_limit_shared_mem, 32 and 8 there, divides by the carveout the
        // driver chose for those launches, 32 KiB and 8 KiB; the model divides by the 228 KiB the
        // driver may choose, as cuOccupancyMaxActiveBlocksPerMultiprocessor does. Shared memory
        // limited neither launch.)
    }

    #[test]
    fn dynamic_shared_memory_limits_blocks_with_the_reservation_counted() {
        let with = |dynamic: u32, max_dynamic: u32| KernelUse {
            dynamic_shared_bytes: dynamic,
            max_dynamic_shared_bytes: max_dynamic,
            ..launch(256, 32)
        };
        // 48 KiB + 1 KiB reserved = 50176 bytes a block, the most a block may have without opting
        // in; 233472 / 50176 = 4 blocks, 32 of 64 warps.
        let (l, active, pct) = on_hopper(with(48 * 1024, 48 * 1024));
        assert_eq!((l.shared_memory, active, pct), (Some(4), 4, 50.0));
        assert_eq!(l.limiter(), Limiter::SharedMemory);
        // 100 KiB after opting in: 103424 a block, 2 blocks, 25%.
        assert_eq!(on_hopper(with(100 * 1024, 100 * 1024)).1, 2);
        // 200 KiB: 1 block, 12.5%.
        assert_eq!(on_hopper(with(200 * 1024, 200 * 1024)).2, 12.5);
        // 32 KiB: 33792 a block, 6 blocks (75%).
        assert_eq!(on_hopper(with(32 * 1024, 48 * 1024)).2, 75.0);
        // More dynamic shared memory than the kernel allows (no opt-in): no block fits.
        assert_eq!(
            on_hopper(with(64 * 1024, 48 * 1024)).0.shared_memory,
            Some(0)
        );
        // Past the opt-in maximum: no block fits either.
        assert_eq!(
            on_hopper(with(228 * 1024, 228 * 1024)).0.shared_memory,
            Some(0)
        );
    }

    #[test]
    fn static_shared_memory_rounds_up_to_128_bytes_with_the_reservation() {
        // 1000 + 1024 reserved = 2024, rounded up to 2048: 233472 / 2048 = 114.
        let k = KernelUse {
            static_shared_bytes: 1000,
            max_dynamic_shared_bytes: 48 * 1024 - 1000,
            ..launch(64, 16)
        };
        assert_eq!(on_hopper(k).0.shared_memory, Some(114));
    }

    #[test]
    fn launch_bounds_smaller_than_the_block_leave_no_block() {
        let k = KernelUse {
            max_threads_per_block: 256,
            ..launch(512, 32)
        };
        let (l, active, _) = on_hopper(k);
        assert_eq!((l.warps, active, l.limiter()), (0, 0, Limiter::Warps));
    }

    #[test]
    fn a_kernel_without_registers_is_not_register_limited() {
        let (l, active, _) = on_hopper(launch(1024, 0));
        assert_eq!((l.registers, active), (None, 2));
    }

    #[test]
    fn volta_allocates_shared_memory_in_256_byte_units_and_reserves_none() {
        let volta = SmLimits {
            compute_capability: [7, 0],
            max_threads_per_sm: 2048,
            shared_bytes_per_sm: 96 * 1024,
            shared_bytes_per_block_optin: 96 * 1024,
            reserved_shared_bytes_per_block: 0,
            ..SmLimits::hopper()
        };
        let k = KernelUse {
            static_shared_bytes: 300,
            max_dynamic_shared_bytes: 48 * 1024 - 300,
            ..launch(128, 32)
        };
        // 300 bytes round up to 512: 98304 / 512 = 192 blocks.
        assert_eq!(block_limits(&volta, &k).unwrap().shared_memory, Some(192));
        assert_eq!(
            block_limits(&volta, &launch(128, 32))
                .unwrap()
                .shared_memory,
            None
        );
    }

    #[test]
    fn bad_input_is_an_error_that_says_what_is_wrong() {
        let sm = SmLimits::hopper();
        assert_eq!(
            block_limits(&sm, &launch(0, 32)),
            Err(OccupancyError::EmptyBlock)
        );
        let pascal = SmLimits {
            compute_capability: [6, 1],
            ..sm
        };
        let e = block_limits(&pascal, &launch(256, 32)).unwrap_err();
        assert!(e.to_string().contains("7.0 to 12.x, not 6.1"), "{e}");
        let broken = SmLimits { warp_size: 0, ..sm };
        assert!(
            block_limits(&broken, &launch(256, 32))
                .unwrap_err()
                .to_string()
                .contains("warp size 0")
        );
        // Neither a division by zero nor an invented percentage from the helpers.
        assert_eq!(
            (
                broken.max_warps(),
                broken.warps_per_block(256),
                broken.occupancy_pct(4, 256)
            ),
            (0, 0, None)
        );
    }
}
