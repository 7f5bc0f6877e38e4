//! Tree reductions over one cube's shared memory, for kernels that reduce one row (or one
//! output element) per cube: partial sums per unit in, the total in element 0 out.

use burn::cubecl;
use cubecl::prelude::*;

/// Tree reduction of `a` and `b` over the cube, in place: on entry `a[t]` and `b[t]` hold the
/// partial sums of unit `t`; on return `a[0]` and `b[0]` hold the totals, visible to every unit.
///
/// The cube size must be a power of two no larger than the shared arrays (the launcher
/// guarantees both). Reducing two values in one tree halves the number of barriers compared
/// with two separate reductions.
#[cube]
pub(crate) fn cube_sum_pair(a: &mut SharedMemory<f32>, b: &mut SharedMemory<f32>) {
    let unit = UNIT_POS_X as usize;
    sync_cube();
    let mut half = (CUBE_DIM_X / 2) as usize;
    while half > 0 {
        if unit < half {
            a[unit] = a[unit] + a[unit + half];
            b[unit] = b[unit] + b[unit + half];
        }
        sync_cube();
        half /= 2;
    }
}

/// Tree reduction of `a` over the cube, in place; same contract as [`cube_sum_pair`].
#[cube]
pub(crate) fn cube_sum(a: &mut SharedMemory<f32>) {
    let unit = UNIT_POS_X as usize;
    sync_cube();
    let mut half = (CUBE_DIM_X / 2) as usize;
    while half > 0 {
        if unit < half {
            a[unit] = a[unit] + a[unit + half];
        }
        sync_cube();
        half /= 2;
    }
}
