//! A `sum_dim` / `mean_dim` chain run as one multi-axis reduction.

use crate::counters;
use crate::cube::CubeInner;
use burn::backend::ir::TensorIr;
use burn_cubecl::CubeRuntime;
use burn_cubecl_fusion::CubeFusionHandle;
use burn_fusion::stream::Context;
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

/// A chain of reductions as Burn's relative IR recorded it: the first reduction's input, the
/// last one's output, and the reductions in order. Every intermediate is read once, by the
/// next reduction, so none is materialised.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SumChain {
    /// The input of the first reduction.
    pub input: TensorIr,
    /// The output of the last reduction.
    pub output: TensorIr,
    /// The reductions, in order.
    pub links: Vec<ChainLink>,
}

/// Runs a [`SumChain`]: one `sum_axes` kernel over the reduced axes whose size is not 1,
/// scaled by `1 / size` for each mean; no kernel when every reduced axis has size 1 (the
/// output is the input's buffer under the output's id).
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

    /// Reads the input, writes the output under its global id.
    pub fn execute(&self, context: &mut Context<CubeFusionHandle<R>>) {
        let global = |relative: &TensorIr| {
            context
                .tensors
                .get(&relative.id)
                .unwrap_or_else(|| {
                    panic!("sum chain: tensor {:?} is not in the context", relative.id)
                })
                .clone()
        };
        let input = global(&self.chain.input);
        let output = global(&self.chain.output);
        let (axes, scale) = axes_and_scale(input.shape.as_slice(), &self.chain.links);

        let x = context.handles.get_float_tensor::<CubeInner<R>>(&input);
        let y = if axes.is_empty() {
            x
        } else {
            sum_axes_cube(x, &axes, scale as f32)
        };
        debug_assert_eq!(y.meta.shape(), &output.shape, "sum chain: output shape");
        context
            .handles
            .register_float_tensor::<CubeInner<R>>(&output.id, y);

        counters::CUBE_SUM_CHAIN.bump();
        counters::CUBE_SUM_CHAIN_OPS.add(self.chain.links.len() as u64);
    }
}

/// The axes of `dims` the chain reduces whose size is not 1 (ascending), and the product of
/// `1 / size` over the axes its means reduce (an axis reduced twice has size 1 the second time).
fn axes_and_scale(dims: &[usize], links: &[ChainLink]) -> (Vec<usize>, f64) {
    let mut reduced = vec![false; dims.len()];
    let mut scale = 1.0;
    for link in links {
        if link.mean && !reduced[link.axis] {
            scale /= dims[link.axis] as f64;
        }
        reduced[link.axis] = true;
    }
    let axes = (0..dims.len())
        .filter(|&axis| reduced[axis] && dims[axis] != 1)
        .collect();
    (axes, scale)
}
