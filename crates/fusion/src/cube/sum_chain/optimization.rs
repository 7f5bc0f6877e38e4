//! A `sum_dim` / `mean_dim` chain run as one multi-axis reduction.

use super::view::reduction_on_input;
use crate::counters;
use crate::cube::{CubeAccRuntime, CubeInner};
use burn::backend::ir::TensorIr;
use burn_cubecl::CubeRuntime;
use burn_cubecl::ops::reshape;
use burn_cubecl_fusion::CubeFusionHandle;
use burn_fusion::stream::{Context, OrderedExecution};
use burnacc_kernels::sum_axes::sum_axes_cube;
use core::marker::PhantomData;

/// One reduction of a chain.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChainLink {
    /// The axis it reduces (kept, with size 1).
    pub axis: usize,
    /// A mean (`mean_dim`) rather than a sum.
    pub mean: bool,
    /// The axis has size 1 in the reduction's input (known from Burn's relative shapes when
    /// fusing; the execution reads the real shapes).
    pub unit_axis: bool,
}

/// A chain of reductions as Burn's relative IR recorded it: the first op's input, the last
/// reduction's output, an optional view prologue and the reductions in order. Every
/// intermediate is read once, by the next op, so none is materialised.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SumChain {
    /// The input of the first op.
    pub input: TensorIr,
    /// The output of the last reduction.
    pub output: TensorIr,
    /// The axes a leading `swap_dims` exchanges.
    pub swap: Option<(usize, usize)>,
    /// The output of a leading `reshape` (after the swap, if any): the tensor the reductions
    /// start from, whose real shape the execution reads.
    pub reshaped: Option<TensorIr>,
    /// The reductions, in order.
    pub links: Vec<ChainLink>,
    /// A trailing `reshape` of the last reduction's output (then `output` is its output): a
    /// relabelling of the contiguous result, as the `reshape([1, C, 1, 1])` after a batch
    /// norm's statistics.
    pub reshaped_output: bool,
}

impl SumChain {
    /// The ops the chain covers: the prologue's and the reductions.
    pub fn num_operations(&self) -> usize {
        usize::from(self.swap.is_some())
            + usize::from(self.reshaped.is_some())
            + self.links.len()
            + usize::from(self.reshaped_output)
    }

    /// Whether a `swap_dims` or `reshape` leads the chain.
    pub fn has_view(&self) -> bool {
        self.swap.is_some() || self.reshaped.is_some()
    }
}

/// Runs a [`SumChain`]: one `sum_axes` kernel over the reduced axes whose size is not 1,
/// scaled by `1 / size` for each mean; no kernel when every reduced axis has size 1 and no view
/// leads the chain (the output is the input's buffer under the output's id).
///
/// A view prologue is read through: the kernel reduces the matching axes of the tensor under
/// the `swap_dims` / `reshape` (`super::view`). When the real shapes do not allow that (a
/// reshape that splits an axis, kept axes out of order), the chain's ops run one by one, as
/// Burn would have run them.
///
/// Dtypes: the input's, accumulated in f32. The result equals the unfused reductions up to the
/// order of the additions.
pub struct SumChainOptimization<R: CubeRuntime> {
    chain: SumChain,
    _runtime: PhantomData<R>,
}
impl<R: CubeRuntime> core::fmt::Debug for SumChainOptimization<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("SumChainOptimization")
            .field(&self.chain)
            .finish()
    }
}

impl<R: CubeRuntime> SumChainOptimization<R> {
    /// The optimization of `chain` (also its restored state).
    pub fn new(chain: SumChain) -> Self {
        Self {
            chain,
            _runtime: PhantomData,
        }
    }

    /// The chain it runs (its serialisable state).
    pub fn chain(&self) -> &SumChain {
        &self.chain
    }

    /// Reads the input, writes the output under its global id; runs the chain's ops one by one
    /// from `execution` when the real shapes rule out one reduction.
    pub fn execute(
        &self,
        context: &mut Context<CubeFusionHandle<R>>,
        execution: &OrderedExecution<CubeAccRuntime<R>>,
    ) {
        let global = |relative: &TensorIr| {
            context
                .tensors
                .get(&relative.id)
                .unwrap_or_else(|| {
                    panic!("sum chain: tensor {:?} is not in the context", relative.id)
                })
                .clone()
        };
        // The global tensor, with the status the chain's first op reads it with: the context's
        // status is its last reader's in the whole segment, which may come after the chain.
        let input = TensorIr {
            status: self.chain.input.status,
            ..global(&self.chain.input)
        };
        let output = global(&self.chain.output);
        let reshaped = self.chain.reshaped.as_ref().map(global);
        let reduction = reduction_on_input(
            input.shape.as_slice(),
            self.chain.swap,
            reshaped.as_ref().map(|tensor| tensor.shape.as_slice()),
            &self.chain.links,
        );
        let reduction = match reduction {
            Some(reduction) if !(reduction.axes.is_empty() && self.chain.has_view()) => reduction,
            _ => {
                for index in 0..self.chain.num_operations() {
                    execution
                        .operation_within_optimization(index)
                        .execute(&mut context.handles);
                }
                counters::CUBE_SUM_CHAIN_UNFUSED.bump();
                return;
            }
        };

        let x = context.handles.get_float_tensor::<CubeInner<R>>(&input);
        let y = if reduction.axes.is_empty() {
            // The input itself; a trailing reshape of it copies only if it is not contiguous.
            reshape(x, output.shape.clone())
        } else {
            // Contiguous, so the reshape to the chain's output shape only relabels it.
            reshape(
                sum_axes_cube(x, &reduction.axes, reduction.scale as f32),
                output.shape.clone(),
            )
        };
        debug_assert_eq!(y.meta.shape(), &output.shape, "sum chain: output shape");
        context
            .handles
            .register_float_tensor::<CubeInner<R>>(&output.id, y);

        counters::CUBE_SUM_CHAIN.bump();
        counters::CUBE_SUM_CHAIN_OPS.add(self.chain.links.len() as u64);
        if self.chain.has_view() {
            counters::CUBE_SUM_CHAIN_VIEWS.bump();
        }
    }
}
