//! A chain's view prologue (`swap_dims`, then `reshape`) mapped back onto the axes of the
//! tensor under it, so that the reduction reads that tensor in place.
//!
//! A batch norm computes its statistics as `x.swap_dims(0, 1).reshape([C, N·H·W]).mean_dim(1)`:
//! the swapped view is not contiguous, so the reshape alone copies the whole activation. The
//! same mean is `Σ x / (N·H·W)` over axes 0, 2 and 3 of `x`, with no copy.

use super::optimization::ChainLink;

/// The reduction a chain computes, on the axes of its input (under the view prologue).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct InputReduction {
    /// The input's axes to sum, ascending, none of size 1.
    pub axes: Vec<usize>,
    /// The factor applied to the sum: `1 / size` of each axis a mean reduced.
    pub scale: f64,
}

/// The reduction `links` compute on a tensor of shape `input_dims`, seen through the prologue:
/// `swap` exchanges two axes, then `reshaped_dims` (when present) is the shape the swapped view
/// is reshaped to, and the links reduce its axes.
///
/// `None` when the chain cannot run as one reduction of the input:
/// - the reshape does not only merge neighbouring axes of the swapped view (or splits one), or
///   an axis has size 0;
/// - the axes the chain keeps are not in the input's order once swapped (the chain's output
///   would then be a transposition of the input's reduced layout, not the same buffer).
pub(crate) fn reduction_on_input(
    input_dims: &[usize],
    swap: Option<(usize, usize)>,
    reshaped_dims: Option<&[usize]>,
    links: &[ChainLink],
) -> Option<InputReduction> {
    // `order[i]`: the input axis behind axis `i` of the swapped view.
    let mut order: Vec<usize> = (0..input_dims.len()).collect();
    if let Some((a, b)) = swap {
        order.swap(a, b);
    }
    let view_dims: Vec<usize> = order.iter().map(|&axis| input_dims[axis]).collect();
    let (groups, reduced_dims) = match reshaped_dims {
        Some(dims) => (merged_groups(&view_dims, dims)?, dims.to_vec()),
        None => (
            (0..view_dims.len()).map(|i| vec![i]).collect(),
            view_dims.clone(),
        ),
    };
    let (reduced, scale) = reduced_axes_and_scale(&reduced_dims, links);

    let mut axes = Vec::new();
    let mut kept = Vec::new();
    for (group, &is_reduced) in groups.iter().zip(&reduced) {
        for &view_axis in group {
            if view_dims[view_axis] == 1 {
                continue;
            }
            let input_axis = order[view_axis];
            if is_reduced {
                axes.push(input_axis);
            } else {
                kept.push(input_axis);
            }
        }
    }
    // The chain's output is contiguous with its kept elements in view order; the reduction of
    // the input is contiguous in the input's order. The same buffer only when the orders agree.
    if kept.windows(2).any(|pair| pair[0] > pair[1]) {
        return None;
    }
    axes.sort_unstable();
    Some(InputReduction { axes, scale })
}

/// For each axis of `reshaped`, the axes of `dims` it merges (consecutive, in order), when the
/// reshape only merges neighbours; axes of size 1 may go to any group. `None` otherwise.
fn merged_groups(dims: &[usize], reshaped: &[usize]) -> Option<Vec<Vec<usize>>> {
    if dims.contains(&0) || reshaped.contains(&0) {
        return None;
    }
    let mut next = 0;
    let mut groups = Vec::with_capacity(reshaped.len());
    for &size in reshaped {
        let mut group = Vec::new();
        let mut product = 1;
        while product < size {
            let dim = *dims.get(next)?;
            group.push(next);
            product *= dim;
            next += 1;
        }
        if product != size {
            return None;
        }
        groups.push(group);
    }
    // What is left can only be axes of size 1.
    dims[next..].iter().all(|&dim| dim == 1).then_some(groups)
}

/// Which axes of `dims` the links reduce, and the product of `1 / size` over the axes their
/// means reduce (an axis reduced twice has size 1 the second time).
pub(crate) fn reduced_axes_and_scale(dims: &[usize], links: &[ChainLink]) -> (Vec<bool>, f64) {
    let mut reduced = vec![false; dims.len()];
    let mut scale = 1.0;
    for link in links {
        if link.mean && !reduced[link.axis] {
            scale /= dims[link.axis] as f64;
        }
        reduced[link.axis] = true;
    }
    (reduced, scale)
}
