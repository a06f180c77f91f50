//! `ares._native`: the Python extension module under the `ares` package. It exposes the
//! Rust runtime (`init`, `shutdown`), the tensor library (`ares-tensor`) and the data
//! frame library (`ares-dataframe`, in `frame`) as thin, low-level classes and functions; the numpy-shaped API (argument handling, operators,
//! indexing, `repr`) lives in the pure-Python package on top, so it can follow numpy
//! closely without this layer growing.
//!
//! This module owns the conversion between Python values and the tensor library's types,
//! and the mapping of its errors to numpy's exception types. It must not compute
//! anything itself: every operation is the tensor library's, and chunk tasks run in Rust
//! worker processes (the extension module loaded by a bare interpreter that enters
//! worker mode at once), never in Python.
//!
//! Long calls (`execute`, `fetch`) release the GIL and run on a thread of their own while
//! the calling thread polls for signals, so Ctrl-C interrupts the wait.

mod frame;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use ares_tensor::kernel::BinOp;
use ares_tensor::kernel::UnOp;
use ares_tensor::{Chunk, DType, Elem, ReduceOp, Scalar, Session, Slice, Tensor, TensorError};
use numpy::{IntoPyArray, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyTuple};

pyo3::create_exception!(
    _native,
    AresError,
    PyRuntimeError,
    "A failure of the Ares runtime (a task, a worker, the object store or the node)."
);

/// How often a thread waiting on a long call looks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// numpy's exception for each tensor error: shapes are `ValueError`, an axis out of range
/// is `numpy.exceptions.AxisError`, a dtype an operation does not take is `TypeError`,
/// a bad index `IndexError`, a singular or non-square matrix `numpy.linalg.LinAlgError`.
fn to_py(py: Python<'_>, e: TensorError) -> PyErr {
    let numpy_error = |path: &[&str], args: Bound<'_, PyTuple>| -> PyResult<PyErr> {
        let mut obj = py.import("numpy")?.into_any();
        for p in path {
            obj = obj.getattr(*p)?;
        }
        Ok(PyErr::from_value(obj.call1(args)?))
    };
    let msg = e.to_string();
    match e {
        TensorError::BadAxis { axis, ndim } => {
            let args = PyTuple::new(py, [axis, ndim]).expect("a tuple of two ints");
            numpy_error(&["exceptions", "AxisError"], args).unwrap_or_else(|err| err)
        }
        TensorError::BadMatrix { .. } => {
            let args = PyTuple::new(py, [msg]).expect("a tuple of one string");
            numpy_error(&["linalg", "LinAlgError"], args).unwrap_or_else(|err| err)
        }
        TensorError::BadDType { .. } => PyTypeError::new_err(msg),
        TensorError::BadIndex { .. } => PyIndexError::new_err(msg),
        TensorError::Runtime(_) => AresError::new_err(msg),
        _ => PyValueError::new_err(msg),
    }
}

fn runtime_err(e: ares::Error) -> PyErr {
    AresError::new_err(e.to_string())
}

/// A tensor error raised on a thread that holds the GIL.
trait OrRaise<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrRaise<T> for Result<T, TensorError> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}

/// Runs `f(cancel)` on a thread of its own with the GIL released, waking every
/// [`SIGNAL_POLL`] to let Python handle signals. On Ctrl-C it sets `cancel`, waits for
/// the call to stop (the tensor executor submits nothing more and waits only for the
/// chunk tasks in flight), then raises `KeyboardInterrupt`: the session stays usable and
/// the abandoned computation's objects are freed. A second Ctrl-C raises at once.
fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    f: impl FnOnce(Arc<AtomicBool>) -> T + Send + 'static,
) -> PyResult<T> {
    let cancel = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let flag = cancel.clone();
    std::thread::Builder::new()
        .name("ares-py-call".into())
        .spawn(move || {
            let _ = tx.send(f(flag));
        })
        .map_err(|e| AresError::new_err(format!("no thread for the call: {e}")))?;
    let mut rx = Some(rx);
    let mut interrupted: Option<PyErr> = None;
    loop {
        // The receiver moves into the detached closure and back (it is `Send`, not `Sync`).
        let (back, got) = py.detach(move || {
            let rx = rx.take().expect("put back after every wait");
            let got = rx.recv_timeout(SIGNAL_POLL);
            (rx, got)
        });
        rx = Some(back);
        match got {
            Ok(v) => return interrupted.map_or(Ok(v), Err),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    if interrupted.is_some() {
                        // A second Ctrl-C stops waiting for the tasks in flight; the
                        // call ends on its own thread and drops its results.
                        return Err(e);
                    }
                    cancel.store(true, Ordering::Relaxed);
                    interrupted = Some(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(interrupted
                    .unwrap_or_else(|| AresError::new_err("the call's thread ended without an answer (it panicked)")));
            }
        }
    }
}

/// A Python `progress(done, total)` callback as a session's progress function (each call
/// takes the GIL).
fn progress_fn(cb: Py<PyAny>) -> impl Fn(ares_tensor::Progress) + Send + Sync + 'static {
    move |p| {
        Python::attach(|py| {
            // A failing progress callback must not fail the computation.
            let _ = cb.call1(py, (p.done, p.total));
        })
    }
}

fn dtype_name(d: DType) -> &'static str {
    d.name()
}

fn parse_dtype(name: &str) -> PyResult<DType> {
    use DType::*;
    [Bool, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64, C64, C128].into_iter().find(|d| d.name() == name).ok_or_else(
        || {
            PyNotImplementedError::new_err(format!(
                "dtype {name} is not supported (supported: bool, int8-int64, uint8-uint64, float32, float64, complex64, complex128)"
            ))
        },
    )
}

/// A Python `bool`, `int` or `float` as a scalar (`bool` first: it is also an `int`).
fn scalar(v: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if v.is_instance_of::<PyBool>() {
        Ok(Scalar::Bool(v.extract()?))
    } else if v.is_instance_of::<PyInt>() {
        v.extract::<i64>().map(Scalar::I64).map_err(|_| {
            PyNotImplementedError::new_err(format!("the integer {v} does not fit in int64, the widest integer dtype"))
        })
    } else if v.is_instance_of::<PyFloat>() {
        Ok(Scalar::F64(v.extract()?))
    } else if let Ok(z) = v.cast::<pyo3::types::PyComplex>() {
        Ok(Scalar::C128(ares_tensor::data::C128::new(z.real(), z.imag())))
    } else {
        Err(PyTypeError::new_err(format!("expected a bool, int, float or complex, got {}", v.get_type().name()?)))
    }
}

fn bin_op(name: &str) -> PyResult<BinOp> {
    Ok(match name {
        "add" => BinOp::Add,
        "sub" => BinOp::Sub,
        "mul" => BinOp::Mul,
        "div" => BinOp::Div,
        "pow" => BinOp::Pow,
        "lt" => BinOp::Lt,
        "le" => BinOp::Le,
        "gt" => BinOp::Gt,
        "ge" => BinOp::Ge,
        "eq" => BinOp::Eq,
        "ne" => BinOp::Ne,
        "and" => BinOp::And,
        "or" => BinOp::Or,
        "maximum" => BinOp::Maximum,
        "minimum" => BinOp::Minimum,
        "floor_divide" => BinOp::FloorDiv,
        "remainder" => BinOp::Mod,
        "atan2" => BinOp::Atan2,
        "hypot" => BinOp::Hypot,
        "copysign" => BinOp::CopySign,
        "logaddexp" => BinOp::LogAddExp,
        "bitwise_and" => BinOp::BitAnd,
        "bitwise_or" => BinOp::BitOr,
        "bitwise_xor" => BinOp::BitXor,
        "left_shift" => BinOp::Shl,
        "right_shift" => BinOp::Shr,
        other => return Err(PyNotImplementedError::new_err(format!("binary operation {other}"))),
    })
}

fn un_op(name: &str) -> PyResult<UnOp> {
    Ok(match name {
        "sqrt" => UnOp::Sqrt,
        "exp" => UnOp::Exp,
        "log" => UnOp::Log,
        "sin" => UnOp::Sin,
        "cos" => UnOp::Cos,
        "tan" => UnOp::Tan,
        "sinh" => UnOp::Sinh,
        "cosh" => UnOp::Cosh,
        "tanh" => UnOp::Tanh,
        "asin" => UnOp::Asin,
        "acos" => UnOp::Acos,
        "atan" => UnOp::Atan,
        "asinh" => UnOp::Asinh,
        "acosh" => UnOp::Acosh,
        "atanh" => UnOp::Atanh,
        "expm1" => UnOp::Expm1,
        "log1p" => UnOp::Log1p,
        "log2" => UnOp::Log2,
        "log10" => UnOp::Log10,
        // numpy's rint (half to even); `round(x, decimals)` is composed in Python as numpy does.
        "rint" => UnOp::Round(0),
        "floor" => UnOp::Floor,
        "ceil" => UnOp::Ceil,
        "trunc" => UnOp::Trunc,
        "sign" => UnOp::Sign,
        "square" => UnOp::Square,
        "positive" => UnOp::Positive,
        "isnan" => UnOp::IsNan,
        "isinf" => UnOp::IsInf,
        "isfinite" => UnOp::IsFinite,
        "signbit" => UnOp::SignBit,
        "invert" => UnOp::Invert,
        "abs" => UnOp::Abs,
        "not" => UnOp::Not,
        "negative" => UnOp::Neg,
        "real" => UnOp::Real,
        "imag" => UnOp::Imag,
        "conj" => UnOp::Conj,
        other => return Err(PyNotImplementedError::new_err(format!("unary operation {other}"))),
    })
}

fn reduce_op(name: &str) -> PyResult<ReduceOp> {
    Ok(match name {
        "sum" => ReduceOp::Sum,
        "prod" => ReduceOp::Prod,
        "min" => ReduceOp::Min,
        "max" => ReduceOp::Max,
        "mean" => ReduceOp::Mean,
        "var" => ReduceOp::Var,
        "std" => ReduceOp::Std,
        "any" => ReduceOp::Any,
        "all" => ReduceOp::All,
        "argmin" => ReduceOp::ArgMin,
        "argmax" => ReduceOp::ArgMax,
        other => return Err(PyNotImplementedError::new_err(format!("reduction {other}"))),
    })
}

/// A lazy, chunked tensor (the Python `ares.tensor.Tensor` wraps one).
#[pyclass(name = "NativeTensor", module = "ares._native", frozen)]
#[derive(Clone)]
struct PyTensor {
    t: Tensor,
}

fn wrap(t: Tensor) -> PyTensor {
    PyTensor { t }
}

#[pymethods]
impl PyTensor {
    /// The shape; `None` for a length known only after running.
    #[getter]
    fn shape(&self) -> Vec<Option<u64>> {
        self.t.shape().iter().map(|&d| (d != ares_tensor::UNKNOWN).then_some(d)).collect()
    }

    /// The dtype's numpy name.
    #[getter]
    fn dtype(&self) -> &'static str {
        dtype_name(self.t.dtype())
    }

    /// Chunk lengths along each dimension (`None` where unknown).
    #[getter]
    fn chunks(&self) -> Vec<Vec<Option<u64>>> {
        self.t.chunks().iter().map(|c| c.iter().map(|&d| (d != ares_tensor::UNKNOWN).then_some(d)).collect()).collect()
    }

    fn binary(&self, py: Python<'_>, op: &str, other: &PyTensor) -> PyResult<PyTensor> {
        self.t.binary(bin_op(op)?, &other.t).or_raise(py).map(wrap)
    }

    fn binary_scalar(&self, py: Python<'_>, op: &str, value: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.t.binary_scalar(bin_op(op)?, scalar(value)?).or_raise(py).map(wrap)
    }

    fn rbinary_scalar(&self, py: Python<'_>, op: &str, value: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.t.rbinary_scalar(bin_op(op)?, scalar(value)?).or_raise(py).map(wrap)
    }

    fn unary(&self, py: Python<'_>, op: &str) -> PyResult<PyTensor> {
        self.t.unary_op(un_op(op)?).or_raise(py).map(wrap)
    }

    #[pyo3(signature = (op, axes, keepdims))]
    fn reduce(&self, py: Python<'_>, op: &str, axes: Option<Vec<usize>>, keepdims: bool) -> PyResult<PyTensor> {
        self.t.reduce(reduce_op(op)?, axes.as_deref(), keepdims).or_raise(py).map(wrap)
    }

    /// Sorted along `axis` (NaN last, stable), or the positions that sort it (`arg`).
    #[pyo3(signature = (axis, descending, arg))]
    fn sort(&self, py: Python<'_>, axis: usize, descending: bool, arg: bool) -> PyResult<PyTensor> {
        let r = if arg { self.t.argsort(axis, descending) } else { self.t.sort(axis, descending) };
        r.or_raise(py).map(wrap)
    }

    /// A discrete Fourier transform along `axis`: `kind` is "forward", "inverse" or
    /// "real_inverse" (to `n` real elements); every element times `scale`.
    #[pyo3(signature = (axis, kind, scale, n=None))]
    fn fft(&self, py: Python<'_>, axis: usize, kind: &str, scale: f64, n: Option<u64>) -> PyResult<PyTensor> {
        use ares_tensor::kernel::FftKind;
        let kind = match (kind, n) {
            ("forward", _) => FftKind::Forward,
            ("inverse", _) => FftKind::Inverse,
            ("real_inverse", Some(n)) => FftKind::RealInverse { n },
            ("real_inverse", None) => {
                return Err(PyValueError::new_err("a real inverse FFT needs n, its output length"));
            }
            (other, _) => {
                return Err(PyValueError::new_err(format!(
                    "unknown FFT kind {other:?} (forward, inverse or real_inverse)"
                )));
            }
        };
        self.t.fft(axis, kind, scale).or_raise(py).map(wrap)
    }

    /// The distinct elements of this 1-d tensor, or their counts.
    fn unique(&self, py: Python<'_>, counts: bool, equal_nan: bool) -> PyResult<PyTensor> {
        self.t.unique(counts, equal_nan).or_raise(py).map(wrap)
    }

    /// The elements at the integer positions `idx` along `axis` (numpy's `take`).
    fn take(&self, py: Python<'_>, idx: &PyTensor, axis: usize) -> PyResult<PyTensor> {
        self.t.take(&idx.t, axis).or_raise(py).map(wrap)
    }

    /// numpy's `take_along_axis`.
    fn take_along(&self, py: Python<'_>, idx: &PyTensor, axis: usize) -> PyResult<PyTensor> {
        self.t.take_along(&idx.t, axis).or_raise(py).map(wrap)
    }

    /// Insertion points of `v` in this sorted 1-d tensor.
    fn searchsorted(&self, py: Python<'_>, v: &PyTensor, right: bool) -> PyResult<PyTensor> {
        self.t.searchsorted(&v.t, right).or_raise(py).map(wrap)
    }

    /// The running sum (`"sum"`) or product (`"prod"`) along `axis`.
    fn cumulative(&self, py: Python<'_>, op: &str, axis: usize) -> PyResult<PyTensor> {
        let op = match op {
            "sum" => ares_tensor::ScanOp::Sum,
            "prod" => ares_tensor::ScanOp::Prod,
            other => return Err(PyNotImplementedError::new_err(format!("cumulative {other}"))),
        };
        self.t.cumulative(op, axis).or_raise(py).map(wrap)
    }

    fn matmul(&self, py: Python<'_>, other: &PyTensor) -> PyResult<PyTensor> {
        self.t.matmul(&other.t).or_raise(py).map(wrap)
    }

    fn permute(&self, py: Python<'_>, axes: Vec<usize>) -> PyResult<PyTensor> {
        self.t.permute(&axes).or_raise(py).map(wrap)
    }

    /// Basic slicing: one `(start, stop, step)` per dimension.
    fn slice(&self, py: Python<'_>, index: Vec<(Option<i64>, Option<i64>, i64)>) -> PyResult<PyTensor> {
        let index: Vec<Slice> = index.into_iter().map(|(a, b, s)| Slice::new(a, b, s)).collect();
        self.t.slice(&index).or_raise(py).map(wrap)
    }

    fn mask(&self, py: Python<'_>, mask: &PyTensor) -> PyResult<PyTensor> {
        self.t.mask(&mask.t).or_raise(py).map(wrap)
    }

    fn reshape(&self, py: Python<'_>, shape: Vec<i64>) -> PyResult<PyTensor> {
        self.t.reshape(&shape).or_raise(py).map(wrap)
    }

    fn rechunk(&self, py: Python<'_>, chunks: Vec<usize>) -> PyResult<PyTensor> {
        self.t.rechunk(&chunks).or_raise(py).map(wrap)
    }

    fn astype(&self, dtype: &str) -> PyResult<PyTensor> {
        Ok(wrap(self.t.astype(parse_dtype(dtype)?)))
    }

    fn clip(&self, lo: f64, hi: f64) -> PyTensor {
        wrap(self.t.clip(lo, hi))
    }

    fn expand_dims(&self, py: Python<'_>, axis: usize) -> PyResult<PyTensor> {
        self.t.expand_dims(axis).or_raise(py).map(wrap)
    }

    fn qr(&self, py: Python<'_>) -> PyResult<(PyTensor, PyTensor)> {
        let (q, r) = self.t.qr().or_raise(py)?;
        Ok((wrap(q), wrap(r)))
    }

    fn svd(&self, py: Python<'_>) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
        let (u, s, v) = self.t.svd().or_raise(py)?;
        Ok((wrap(u), wrap(s), wrap(v)))
    }

    /// numpy's `eig`: eigenvalues and eigenvectors, complex.
    fn eig(&self, py: Python<'_>) -> PyResult<(PyTensor, PyTensor)> {
        let (w, v) = self.t.eig().or_raise(py)?;
        Ok((wrap(w), wrap(v)))
    }

    /// numpy's `svd(a)` with `full_matrices=True`: `U` and `Vh` square.
    fn svd_full(&self, py: Python<'_>) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
        let (u, s, v) = self.t.svd_full().or_raise(py)?;
        Ok((wrap(u), wrap(s), wrap(v)))
    }

    fn cholesky(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.t.cholesky().or_raise(py).map(wrap)
    }

    fn slogdet(&self, py: Python<'_>) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
        let (sign, log, det) = self.t.slogdet().or_raise(py)?;
        Ok((wrap(sign), wrap(log), wrap(det)))
    }

    fn eigh(&self, py: Python<'_>) -> PyResult<(PyTensor, PyTensor)> {
        let (w, v) = self.t.eigh().or_raise(py)?;
        Ok((wrap(w), wrap(v)))
    }

    fn inv(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.t.inv().or_raise(py).map(wrap)
    }
}

/// Runs tensors: computes them, keeps executed results, and fetches them into numpy.
#[pyclass(name = "NativeSession", module = "ares._native", frozen)]
struct PySession {
    s: Arc<Session>,
}

#[pymethods]
impl PySession {
    #[new]
    fn new() -> Self {
        PySession { s: Arc::new(Session::new()) }
    }

    /// The same session, computing frames: one session under both, so a frame made from
    /// tensors or turned into one runs as one graph and sees what either computed.
    fn frame_session(&self) -> frame::PyFrameSession {
        frame::PyFrameSession::of(ares_dataframe::Session::from(self.s.tileable().clone()))
    }

    /// Computes the tensors and keeps their chunks while they live; `progress(done,
    /// total)` is called as chunk tasks finish (only when given: each call takes the GIL).
    #[pyo3(signature = (tensors, progress=None))]
    fn execute(&self, py: Python<'_>, tensors: Vec<Bound<'_, PyTensor>>, progress: Option<Py<PyAny>>) -> PyResult<()> {
        // The same session (results are cached per session), reporting for this call only.
        let mut s = Session::clone(&self.s);
        if let Some(cb) = progress {
            s = s.on_progress(progress_fn(cb));
        }
        let tensors: Vec<PyTensor> = tensors.iter().map(|t| t.get().clone()).collect();
        let results = interruptible(py, move |cancel| {
            let s = s.cancelled_by(cancel);
            tensors.iter().map(|t| s.execute(&t.t)).collect::<Result<Vec<()>, _>>()
        })?;
        results.map(|_| ()).or_raise(py)
    }

    /// Computes the tensor and returns it as a numpy array: a read-only view of the
    /// stored chunk when the result is one chunk (zero copy; the array keeps the object
    /// alive, as `ray.get` does), else an array of its own assembled from the chunks.
    /// Whether the tensor was computed in this session (never computes).
    fn is_computed(&self, tensor: &PyTensor) -> bool {
        self.s.is_computed(&tensor.t)
    }

    /// `progress` as for `execute` (called only if chunk tasks run).
    #[pyo3(signature = (tensor, progress=None))]
    fn fetch<'py>(
        &self,
        py: Python<'py>,
        tensor: &PyTensor,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut s = Session::clone(&self.s);
        if let Some(cb) = progress {
            s = s.on_progress(progress_fn(cb));
        }
        ares_tensor::with_dtype!(tensor.t.dtype(), T => <T as NumpyElem>::fetch(py, s, &tensor.t))
    }
}

/// An element type as numpy holds it: its own where numpy has it, `numpy.complex64`
/// and `complex128` (num-complex's, of the same `repr(C)` layout) for complex ones.
trait NumpyElem: Elem {
    fn fetch<'py>(py: Python<'py>, s: Session, t: &Tensor) -> PyResult<Bound<'py, PyAny>>;
    fn from_numpy(py: Python<'_>, array: &Bound<'_, PyUntypedArray>, chunks: &[usize]) -> PyResult<PyTensor>;
}

macro_rules! numpy_elem {
    ($($t:ty),*) => {$(
        impl NumpyElem for $t {
            fn fetch<'py>(py: Python<'py>, s: Session, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
                fetch_as::<$t>(py, s, t)
            }
            fn from_numpy(py: Python<'_>, array: &Bound<'_, PyUntypedArray>, chunks: &[usize]) -> PyResult<PyTensor> {
                let a = array.cast::<PyArrayDyn<$t>>()?.readonly();
                ares_tensor::from_view(a.as_array(), chunks).or_raise(py).map(wrap)
            }
        }
    )*};
}
numpy_elem!(bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

macro_rules! numpy_complex {
    ($($t:ident => $n:ty),*) => {$(
        impl NumpyElem for ares_tensor::data::$t {
            /// Copied out (complex results are not viewed in place).
            fn fetch<'py>(py: Python<'py>, s: Session, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
                let t = t.clone();
                let a = interruptible(py, move |cancel| s.cancelled_by(cancel).fetch::<Self>(&t))?.or_raise(py)?;
                Ok(a.mapv(|z| <$n>::new(z.re, z.im)).into_pyarray(py).into_any())
            }
            fn from_numpy(py: Python<'_>, array: &Bound<'_, PyUntypedArray>, chunks: &[usize]) -> PyResult<PyTensor> {
                let a = array.cast::<PyArrayDyn<$n>>()?.readonly();
                let ours = a.as_array().mapv(|z| Self::new(z.re, z.im));
                ares_tensor::from_view(ours.view(), chunks).or_raise(py).map(wrap)
            }
        }
    )*};
}
numpy_complex!(C64 => numpy::Complex32, C128 => numpy::Complex64);

/// A stored chunk a numpy array views: the array's `base`, so the object lives as long
/// as the array.
#[pyclass(name = "StoredChunk", module = "ares._native", frozen)]
struct StoredChunk {
    view: ares::View<Chunk>,
}

enum Fetched<T> {
    InStore(ares::View<Chunk>),
    Copied(ndarray::ArrayD<T>),
}

fn fetch_as<'py, T: Elem + numpy::Element>(py: Python<'py>, s: Session, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let t = t.clone();
    let got = interruptible(py, move |cancel| -> Result<Fetched<T>, TensorError> {
        let s = s.cancelled_by(cancel);
        match s.view(&t)? {
            Some(v) if ares_tensor::elements_in_place::<T>(&v).is_some() => Ok(Fetched::InStore(v)),
            _ => Ok(Fetched::Copied(s.fetch::<T>(&t)?)),
        }
    })?
    .or_raise(py)?;
    let view = match got {
        Fetched::Copied(a) => return Ok(a.into_pyarray(py).into_any()),
        Fetched::InStore(v) => v,
    };
    let shape: Vec<usize> = view.shape.iter().map(|d| d.to_native() as usize).collect();
    let holder = Bound::new(py, StoredChunk { view })?;
    let elems = ares_tensor::elements_in_place::<T>(&holder.get().view).expect("checked above");
    // SAFETY: `elems` lives in the stored chunk that `holder` keeps (and that nothing
    // writes once sealed); the array made below holds `holder` as its base, and is made
    // read-only so numpy never writes through it either.
    let array = unsafe {
        let v = ndarray::ArrayViewD::from_shape_ptr(ndarray::IxDyn(&shape), elems.as_ptr());
        numpy::PyArray::borrow_from_array(&v, holder.into_any())
    };
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("write", false)?;
    array.call_method("setflags", (), Some(&kwargs))?;
    Ok(array.into_any())
}

/// Starts the runtime: an embedded one-node cluster whose workers are this module loaded
/// by `python` (a bare interpreter that enters worker mode at once), or a connection to a
/// running cluster at `address`.
#[pyfunction]
#[pyo3(signature = (address, num_cpus, object_store_memory, spill_dirs, worker_program, worker_args))]
fn init(
    py: Python<'_>,
    address: Option<String>,
    num_cpus: Option<u32>,
    object_store_memory: Option<u64>,
    spill_dirs: Vec<String>,
    worker_program: String,
    worker_args: Vec<String>,
) -> PyResult<()> {
    let mut cfg = ares::Config::from_env().map_err(|e| PyValueError::new_err(e.to_string()))?;
    if address.is_some() {
        cfg.address = address;
    }
    if num_cpus.is_some() {
        cfg.num_cpus = num_cpus;
    }
    if object_store_memory.is_some() {
        cfg.object_store_memory = object_store_memory;
    }
    if !spill_dirs.is_empty() {
        cfg.spill_dirs = spill_dirs.into_iter().map(Into::into).collect();
    }
    cfg.worker_command = Some(ares::WorkerCommand {
        program: worker_program.into(),
        args: worker_args,
        env: vec![("ARES_WORKER_DEFERRED".into(), "1".into())],
    });
    py.detach(|| ares::init_with(cfg)).map_err(|e| match e {
        ares::Error::AlreadyInitialized => {
            AresError::new_err("ares is already initialized in this process; call ares.shutdown() first")
        }
        e => runtime_err(e),
    })
}

/// Stops the runtime (workers, the embedded node, its store). Safe to call twice.
#[pyfunction]
fn shutdown(py: Python<'_>) {
    py.detach(ares::shutdown)
}

/// Whether the runtime is running in this process.
#[pyfunction]
fn is_initialized() -> bool {
    ares::is_initialized()
}

/// This node's object store figures: capacity, used bytes and objects, pinned, spilled.
#[pyfunction]
fn node_stats(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let s = py.detach(ares::node_stats).map_err(runtime_err)?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("store_capacity", s.store_capacity)?;
    d.set_item("store_used", s.store_used)?;
    d.set_item("store_objects", s.store_objects)?;
    d.set_item("store_pinned_bytes", s.store_pinned_bytes)?;
    d.set_item("store_spilled_bytes", s.store_spilled_bytes)?;
    d.set_item("store_spilled_objects", s.store_spilled_objects)?;
    Ok(d)
}

/// Enters worker mode (never returns): what a worker process started by `init` runs.
#[pyfunction]
fn _worker_main(py: Python<'_>) {
    py.detach(|| ares::__private::worker_main())
}

#[pyfunction]
fn full(py: Python<'_>, shape: Vec<u64>, value: &Bound<'_, PyAny>, chunks: Vec<usize>) -> PyResult<PyTensor> {
    ares_tensor::full(&shape, scalar(value)?, &chunks).or_raise(py).map(wrap)
}

#[pyfunction]
fn arange(py: Python<'_>, start: f64, stop: f64, step: f64, chunk: usize) -> PyResult<PyTensor> {
    ares_tensor::arange(start, stop, step, chunk).or_raise(py).map(wrap)
}

/// Integers from `start` below `stop` by `step`, computed exactly in int64.
#[pyfunction]
fn arange_int(py: Python<'_>, start: i64, stop: i64, step: i64, chunk: usize) -> PyResult<PyTensor> {
    ares_tensor::arange_int(start, stop, step, chunk).or_raise(py).map(wrap)
}

#[pyfunction]
fn linspace(py: Python<'_>, start: f64, stop: f64, num: u64, chunk: usize) -> PyResult<PyTensor> {
    ares_tensor::linspace(start, stop, num, chunk).or_raise(py).map(wrap)
}

#[pyfunction]
fn eye(py: Python<'_>, n: u64, chunk: usize) -> PyResult<PyTensor> {
    ares_tensor::eye(n, chunk).or_raise(py).map(wrap)
}

/// A tensor holding the array's elements, copied chunk by chunk straight from its buffer
/// (any strides; no intermediate copy).
#[pyfunction]
fn from_numpy(py: Python<'_>, array: &Bound<'_, PyUntypedArray>, chunks: Vec<usize>) -> PyResult<PyTensor> {
    let dtype = array.dtype();
    let name = dtype.str()?.to_string();
    ares_tensor::with_dtype!(parse_dtype(&name)?, T => <T as NumpyElem>::from_numpy(py, array, &chunks))
}

#[pyfunction]
fn random(
    py: Python<'_>,
    kind: &str,
    shape: Vec<u64>,
    chunks: Vec<usize>,
    seed: u64,
    low: f64,
    high: f64,
) -> PyResult<PyTensor> {
    use ares_tensor::random as r;
    let t = match kind {
        "uniform" => r::uniform(low, high, &shape, &chunks, seed),
        "normal" => r::randn(&shape, &chunks, seed),
        "randint" => r::randint(low as i64, high as i64, &shape, &chunks, seed),
        "poisson" => r::poisson(low, &shape, &chunks, seed),
        // Trials arrive as a float: exact up to 2^53, which the caller checks.
        "binomial" => r::binomial(low as i64, high, &shape, &chunks, seed),
        "standard_gamma" => r::standard_gamma(low, &shape, &chunks, seed),
        "negative_binomial" => r::negative_binomial(low, high, &shape, &chunks, seed),
        other => return Err(PyNotImplementedError::new_err(format!("random.{other}"))),
    };
    t.or_raise(py).map(wrap)
}

#[pyfunction]
fn concatenate(py: Python<'_>, tensors: Vec<Bound<'_, PyTensor>>, axis: usize) -> PyResult<PyTensor> {
    let ts: Vec<Tensor> = tensors.iter().map(|t| t.get().t.clone()).collect();
    ares_tensor::concatenate(&ts, axis).or_raise(py).map(wrap)
}

#[pyfunction]
fn stack(py: Python<'_>, tensors: Vec<Bound<'_, PyTensor>>, axis: usize) -> PyResult<PyTensor> {
    let ts: Vec<Tensor> = tensors.iter().map(|t| t.get().t.clone()).collect();
    ares_tensor::stack(&ts, axis).or_raise(py).map(wrap)
}

#[pyfunction]
fn where_(py: Python<'_>, cond: &PyTensor, a: &PyTensor, b: &PyTensor) -> PyResult<PyTensor> {
    ares_tensor::where_(&cond.t, &a.t, &b.t).or_raise(py).map(wrap)
}

#[pyfunction]
fn solve(py: Python<'_>, a: &PyTensor, b: &PyTensor) -> PyResult<PyTensor> {
    ares_tensor::solve(&a.t, &b.t).or_raise(py).map(wrap)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("AresError", m.py().get_type::<AresError>())?;
    m.add_class::<PyTensor>()?;
    m.add_class::<PySession>()?;
    m.add_class::<StoredChunk>()?;
    m.add_class::<frame::PyExpr>()?;
    m.add_class::<frame::PyFrame>()?;
    m.add_class::<frame::PyFrameSession>()?;
    // Workers are this module: its data frame kernels must be linked in.
    ares_dataframe::link_kernels();
    for f in [
        wrap_pyfunction!(init, m)?,
        wrap_pyfunction!(shutdown, m)?,
        wrap_pyfunction!(is_initialized, m)?,
        wrap_pyfunction!(node_stats, m)?,
        wrap_pyfunction!(_worker_main, m)?,
        wrap_pyfunction!(full, m)?,
        wrap_pyfunction!(arange, m)?,
        wrap_pyfunction!(arange_int, m)?,
        wrap_pyfunction!(linspace, m)?,
        wrap_pyfunction!(eye, m)?,
        wrap_pyfunction!(from_numpy, m)?,
        wrap_pyfunction!(random, m)?,
        wrap_pyfunction!(concatenate, m)?,
        wrap_pyfunction!(stack, m)?,
        wrap_pyfunction!(where_, m)?,
        wrap_pyfunction!(solve, m)?,
        wrap_pyfunction!(frame::frame_from_tensors, m)?,
        wrap_pyfunction!(frame::frame_from_columns, m)?,
        wrap_pyfunction!(frame::read_csv, m)?,
        wrap_pyfunction!(frame::read_parquet, m)?,
        wrap_pyfunction!(frame::frame_concat, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}
