//! The scalar-expression core both tiled libraries evaluate on their chunks: numeric
//! dtypes with numpy 2's promotion (NEP 50: Python scalars are weak), the element-wise
//! operations with numpy's semantics, and their kernels over typed slices.
//!
//! A tensor chunk program and a frame column expression compute `+`, `//`, `**`,
//! comparisons, `abs`, `round` and the float functions through these same kernels, so
//! they agree to the bit; each library only moves its values in and out (tensor
//! buffers; Arrow columns, whose missing values the frame evaluator tracks itself).

mod complex;
mod dtype;
mod ops;

pub use complex::{ArchivedC64, ArchivedC128, C64, C128};
pub use dtype::{DType, Kind, Operand, TypeError, Typed, binary, common, result_type, result_type_weak, unary};
pub use ops::{
    BinOp, Float, Num, OpError, Rhs, UnOp, arith, compare, float_divmod, float_unary, logical, predicate, round_f64,
    unary as unary_kernel,
};
