// Docstrings of mlx.core functions, by name (written for this project): a summary per
// function, completed with the Args / Returns section its kind shares. Keep entries sorted.
#include "python/src/docstrings.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>

namespace mlx::core::python {

namespace {

// What a function's parameters look like, so that the shared Args / Returns text is written once.
enum class Kind { plain, unary, binary, reduction, scan, scan_dtype };

const char* shared_section(Kind kind) {
  switch (kind) {
    case Kind::unary:
      return R"doc(Args:
    a (array): Input array (Python scalars are accepted).

Returns:
    array: The result, element by element.)doc";
    case Kind::binary:
      return R"doc(Args:
    a (array or scalar): First operand.
    b (array or scalar): Second operand; the two broadcast together.

Returns:
    array: The result, in the promoted dtype.)doc";
    case Kind::reduction:
      return R"doc(Args:
    a (array): Input array.
    axis (int or list(int), optional): The axis or axes to reduce; all of them by default.
    keepdims (bool, optional): Keep the reduced axes as size-1 dimensions. Default: ``False``.

Returns:
    array: The reduction.)doc";
    case Kind::scan:
      return R"doc(Args:
    a (array): Input array.
    axis (int, optional): The axis to scan; without it the flattened array is scanned.
    reverse (bool, optional): Scan from the end. Default: ``False``.
    inclusive (bool, optional): Include each element in its own result (``False`` shifts by
        one and starts from the identity). Default: ``True``.

Returns:
    array: The scan, shaped like ``a`` (1-D without an axis).)doc";
    case Kind::scan_dtype:
      return R"doc(Args:
    a (array): Input array.
    axis (int, optional): The axis to scan; without it the flattened array is scanned.
    reverse (bool, optional): Scan from the end. Default: ``False``.
    inclusive (bool, optional): Include each element in its own result (``False`` shifts by
        one and starts from the identity). Default: ``True``.
    dtype (Dtype, optional): Cast the input to this type first.

Returns:
    array: The scan, shaped like ``a`` (1-D without an axis).)doc";
    case Kind::plain:
      break;
  }
  return "";
}

struct Entry {
  std::string_view name;
  Kind kind;
  const char* text;
  const char* example = nullptr;  // after the shared section
};

constexpr Entry kDocs[] = {
    {"FunctionExporter", Kind::plain,
     R"doc(A callable that traces a function once per call and writes every trace to one file, made by :func:`exporter`. Call it with example inputs (positional and keyword arrays); use it as a context manager, or call ``close()``, to write the file.)doc"},
    {"abs", Kind::unary,
     R"doc(The absolute value of each element (the magnitude for complex inputs).)doc"},
    {"add", Kind::binary, R"doc(The element-wise sum ``a + b``.)doc", R"doc(Example:
    >>> mx.add(mx.array([1, 2]), 3)
    array([4, 5], dtype=int32))doc"},
    {"addmm", Kind::plain,
     R"doc(``alpha * (a @ b) + beta * c`` in one operation.

Returns:
    array)doc"},
    {"all", Kind::reduction,
     R"doc(Whether every element over ``axis`` is non-zero; a bool array.)doc"},
    {"allclose", Kind::plain,
     R"doc(Whether every element satisfies :func:`isclose`.

Returns:
    array: A scalar bool array.)doc"},
    {"any", Kind::reduction,
     R"doc(Whether any element over ``axis`` is non-zero; a bool array.)doc"},
    {"arange", Kind::plain,
     R"doc(Evenly spaced values in ``[start, stop)`` with ``step``. The dtype is int32 unless an argument is a float (then float32) or ``dtype`` is given.

Example:
    >>> mx.arange(0, 1, 0.25)
    array([0, 0.25, 0.5, 0.75], dtype=float32))doc"},
    {"arccos", Kind::unary,
     R"doc(The inverse cosine of each element, in radians. Also available as ``mx.acos``.)doc"},
    {"arccosh", Kind::unary,
     R"doc(The inverse hyperbolic cosine of each element. Also available as ``mx.acosh``.)doc"},
    {"arcsin", Kind::unary,
     R"doc(The inverse sine of each element, in radians. Also available as ``mx.asin``.)doc"},
    {"arcsinh", Kind::unary,
     R"doc(The inverse hyperbolic sine of each element. Also available as ``mx.asinh``.)doc"},
    {"arctan", Kind::unary,
     R"doc(The inverse tangent of each element, in radians. Also available as ``mx.atan``.)doc"},
    {"arctan2", Kind::binary,
     R"doc(The angle of the point ``(b, a)``: the inverse tangent of ``a / b`` using both signs to pick the quadrant, in radians. Also available as ``mx.atan2``.)doc"},
    {"arctanh", Kind::unary,
     R"doc(The inverse hyperbolic tangent of each element. Also available as ``mx.atanh``.)doc"},
    {"argmax", Kind::plain,
     R"doc(The index of the largest element along ``axis`` (the flattened array without one); the first on ties.

Returns:
    array: uint32 indices.)doc"},
    {"argmin", Kind::plain,
     R"doc(The index of the smallest element along ``axis`` (the flattened array without one); the first on ties.

Returns:
    array: uint32 indices.)doc"},
    {"argpartition", Kind::plain,
     R"doc(The indices that would :func:`partition` ``a`` around ``kth``.

Returns:
    array: uint32 indices.)doc"},
    {"argsort", Kind::plain,
     R"doc(The indices that sort ``a`` along ``axis`` (stable; the flattened array with ``axis=None``).

Returns:
    array: uint32 indices.)doc"},
    {"array_equal", Kind::plain,
     R"doc(Whether two arrays have the same shape and equal elements (the dtypes may differ).

Args:
    equal_nan (bool): Count NaNs as equal to each other. Default: ``False``.

Returns:
    array: A scalar bool array.)doc"},
    {"as_strided", Kind::plain,
     R"doc(A view of ``a``'s buffer with the given shape, strides (in elements) and offset. Nothing is checked against the buffer's bounds: use with care.

Returns:
    array)doc"},
    {"asarray", Kind::plain,
     R"doc(``a`` as an array: the input itself when it already is one of that dtype, shared memory for DLPack producers where possible, else a copy. ``copy=False`` raises ValueError when a copy is needed; ``copy=True`` always copies.)doc"},
    {"astype", Kind::plain,
     R"doc(``a`` converted to ``dtype`` (NumPy's conversion rules; floats to integers truncate).)doc"},
    {"atleast_1d", Kind::plain, R"doc(The inputs with at least one dimension.)doc"},
    {"atleast_2d", Kind::plain, R"doc(The inputs with at least two dimensions.)doc"},
    {"atleast_3d", Kind::plain, R"doc(The inputs with at least three dimensions.)doc"},
    {"bartlett", Kind::plain,
     R"doc(The Bartlett (triangular) window of ``M`` points (NumPy's definition), float32.)doc"},
    {"bitwise_and", Kind::binary,
     R"doc(The element-wise bitwise AND of integer or bool arrays.)doc"},
    {"bitwise_invert", Kind::unary,
     R"doc(The bitwise complement ``~a`` of each element of an integer or bool array.)doc"},
    {"bitwise_or", Kind::binary, R"doc(The element-wise bitwise OR of integer or bool arrays.)doc"},
    {"bitwise_xor", Kind::binary,
     R"doc(The element-wise bitwise XOR of integer or bool arrays.)doc"},
    {"blackman", Kind::plain,
     R"doc(The Blackman window of ``M`` points (NumPy's definition), float32.)doc"},
    {"block_masked_mm", Kind::plain,
     R"doc(Matrix product with blocks of ``block_size x block_size`` masked out: ``(a * mask_lhs) @ (b * mask_rhs) * mask_out`` with each mask given per block.

For ``a`` of shape ``(..., M, K)`` and ``b`` of shape ``(..., K, N)``, ``mask_lhs`` has shape ``(..., ceil(M / block_size), ceil(K / block_size))``, ``mask_rhs`` ``(..., ceil(K / block_size), ceil(N / block_size))`` and ``mask_out`` ``(..., ceil(M / block_size), ceil(N / block_size))``. Boolean masks keep or zero their blocks; other masks scale them. Batch dimensions broadcast.

Args:
    a (array): Input array.
    b (array): Input array.
    block_size (int): Size of the masked blocks (MLX supports 32 and 64). Default: ``64``.
    mask_out (array, optional): Mask of the output blocks. Default: ``None``.
    mask_lhs (array, optional): Mask of the blocks of ``a``. Default: ``None``.
    mask_rhs (array, optional): Mask of the blocks of ``b``. Default: ``None``.

Returns:
    array: The masked product.)doc"},
    {"broadcast_arrays", Kind::plain,
     R"doc(The inputs broadcast to their common shape.

Returns:
    tuple(array, ...))doc"},
    {"broadcast_shapes", Kind::plain,
     R"doc(The shape that the given shapes broadcast to (ValueError when they do not).)doc"},
    {"broadcast_to", Kind::plain,
     R"doc(``a`` broadcast to ``shape`` (NumPy's rules) without copying.

Returns:
    array)doc"},
    {"ceil", Kind::unary,
     R"doc(The smallest integer not less than each element (integers pass through).)doc"},
    {"clip", Kind::plain,
     R"doc(Limits each element to ``[a_min, a_max]``; either bound may be None (not both).

Returns:
    array: ``minimum(maximum(a, a_min), a_max)``.)doc"},
    {"concat", Kind::plain,
     R"doc(Joins arrays along an existing axis; the same as :func:`concatenate`.

Returns:
    array)doc"},
    {"concatenate", Kind::plain,
     R"doc(Joins arrays along an existing axis (the flattened arrays with ``axis=None``). Also available as ``mx.concat``.

Returns:
    array)doc"},
    {"conj", Kind::unary,
     R"doc(The complex conjugate of each element; the same as :func:`conjugate`.)doc"},
    {"conjugate", Kind::unary,
     R"doc(The complex conjugate of each element (real inputs are returned unchanged).)doc"},
    {"contiguous", Kind::plain,
     R"doc(A row-contiguous copy of ``a``, or ``a`` itself when it already is one (also when it is column-contiguous and ``allow_col_major`` is set). Also available as ``mx.ascontiguous`` (an extension of this project).

Returns:
    array: The same values with a dense layout.)doc"},
    {"conv1d", Kind::plain,
     R"doc(1-D convolution over channels-last input ``(N, L, C_in)`` with weight ``(C_out, K, C_in / groups)``.

Args:
    input (array): Input of shape ``(N, L, C_in)``.
    weight (array): Kernels of shape ``(C_out, K, C_in / groups)``.
    stride (int, optional): Step between output positions. Default: ``1``.
    padding (int, optional): Zeros added on both sides. Default: ``0``.
    dilation (int, optional): Spacing between kernel taps. Default: ``1``.
    groups (int, optional): Input and output channels split into this many groups. Default: ``1``.

Returns:
    array: Output of shape ``(N, L_out, C_out)``.)doc"},
    {"conv2d", Kind::plain,
     R"doc(2-D convolution over channels-last input ``(N, H, W, C_in)`` with weight ``(C_out, KH, KW, C_in / groups)``; stride, padding and dilation are ints or pairs.

Returns:
    array: Output of shape ``(N, H_out, W_out, C_out)``.)doc"},
    {"conv3d", Kind::plain,
     R"doc(3-D convolution over channels-last input ``(N, D, H, W, C_in)`` with weight ``(C_out, KD, KH, KW, C_in / groups)``; stride, padding and dilation are ints or triples.

Returns:
    array: Output of shape ``(N, D_out, H_out, W_out, C_out)``.)doc"},
    {"conv_general", Kind::plain,
     R"doc(General N-D convolution: per-dimension stride, padding (symmetric or ``(low, high)`` pairs), kernel dilation, input dilation, groups, and ``flip`` for a true convolution instead of a cross-correlation. Layouts are channels-last as in :func:`conv2d`.

Returns:
    array: The convolution.)doc"},
    {"conv_transpose1d", Kind::plain,
     R"doc(Transposed 1-D convolution (the gradient of :func:`conv1d` with respect to its input), weight ``(C_out, K, C_in / groups)``; ``output_padding`` adds rows at the end.

Returns:
    array: Output of shape ``(N, L_out, C_out)``.)doc"},
    {"conv_transpose2d", Kind::plain,
     R"doc(Transposed 2-D convolution (the gradient of :func:`conv2d` with respect to its input), weight ``(C_out, KH, KW, C_in / groups)``.

Returns:
    array: Output of shape ``(N, H_out, W_out, C_out)``.)doc"},
    {"conv_transpose3d", Kind::plain,
     R"doc(Transposed 3-D convolution (the gradient of :func:`conv3d` with respect to its input), weight ``(C_out, KD, KH, KW, C_in / groups)``.

Returns:
    array: Output of shape ``(N, D_out, H_out, W_out, C_out)``.)doc"},
    {"convolve", Kind::plain,
     R"doc(The discrete linear convolution of two 1-D arrays, as ``numpy.convolve``; ``mode`` is ``"full"``, ``"same"`` or ``"valid"``.

Returns:
    array: The convolution.)doc"},
    {"cos", Kind::unary, R"doc(The cosine of each element (radians).)doc"},
    {"cosh", Kind::unary, R"doc(The hyperbolic cosine of each element.)doc"},
    {"count_nonzero", Kind::plain,
     R"doc(The number of non-zero elements over ``axis``.

Returns:
    array: int32 counts.)doc"},
    {"cummax", Kind::scan, R"doc(The running maximum along ``axis``.)doc"},
    {"cummin", Kind::scan, R"doc(The running minimum along ``axis``.)doc"},
    {"cumprod", Kind::scan_dtype,
     R"doc(The cumulative product along ``axis``. Also available as ``mx.cumulative_prod``.)doc"},
    {"cumsum", Kind::scan_dtype,
     R"doc(The cumulative sum along ``axis``. Also available as ``mx.cumulative_sum``.)doc"},
    {"custom_function", Kind::plain,
     R"doc(Decorator for a function with its own derivative rules. Use ``@f.vjp``, ``@f.jvp`` and ``@f.vmap`` on the result to register them; transforms use the rules instead of tracing the function.)doc"},
    {"degrees", Kind::unary, R"doc(Each element converted from radians to degrees.)doc"},
    {"depends", Kind::plain,
     R"doc(The ``inputs`` unchanged, made to depend on ``dependencies``: they are evaluated first.

Returns:
    list(array))doc"},
    {"dequantize", Kind::plain,
     R"doc(Reconstructs a matrix from its quantized form (see :func:`quantize`): ``scales * q + biases`` per group (affine) or ``scale * element`` (mxfp4, mxfp8, nvfp4).

Modes (group sizes; bits; scales): ``"affine"`` (32, 64*, 128; 1, 2, 3, 4*, 5, 6, 8; a scale and a bias per group in the input's dtype), ``"mxfp4"`` (32; 4; uint8 E8M0), ``"mxfp8"`` (32; 8; uint8 E8M0), ``"nvfp4"`` (16; 4; uint8 E4M3, optionally relative to a float32 ``global_scale``). * marks the defaults. The mx and nv modes store E2M1 (fp4) or E4M3 (fp8) elements and have no biases. Codes are packed little-endian into ``uint32`` words (the first element in the lowest bits), as MLX packs them.

Args:
    w (array): Packed ``uint32`` codes from :func:`quantize`.
    scales (array): The scales per group.
    biases (array, optional): The biases per group (affine only). Default: ``None``.
    group_size (int, optional): Default: the mode's.
    bits (int, optional): Default: the mode's.
    mode (str, optional): Default: ``"affine"``.
    global_scale (array, optional): nvfp4 only: the global scale used to quantize. Default: ``None``.
    dtype (Dtype, optional): The output dtype. Default: the scales' dtype (affine), else ``bfloat16``.

Returns:
    array: The dequantized matrix.)doc"},
    {"diag", Kind::plain,
     R"doc(The ``k``-th diagonal of a 2-D array, or a 2-D array with a 1-D input on its ``k``-th diagonal.

Returns:
    array)doc"},
    {"diagonal", Kind::plain,
     R"doc(The diagonal of the matrices formed by ``axis1`` and ``axis2`` at ``offset``, as the last axis.

Returns:
    array)doc"},
    {"diff", Kind::plain,
     R"doc(The ``n``-th discrete difference ``a[i+1] - a[i]`` along ``axis``.

Returns:
    array: The axis is ``n`` shorter.)doc"},
    {"divide", Kind::binary,
     R"doc(The element-wise true quotient ``a / b`` (integer inputs give floats).)doc",
     R"doc(Example:
    >>> mx.divide(mx.array([1, 2]), 2)
    array([0.5, 1], dtype=float32))doc"},
    {"divmod", Kind::plain,
     R"doc(divmod(a, b)

The floor quotient and the remainder of ``a`` and ``b`` in one pass.

Returns:
    tuple(array, array): ``(a // b, a % b)``.)doc"},
    {"einsum", Kind::plain,
     R"doc(Einstein summation over the subscripts string, e.g. ``mx.einsum('ij,jk->ik', a, b)``.

Returns:
    array)doc"},
    {"einsum_path", Kind::plain,
     R"doc(The contraction order :func:`einsum` uses for the subscripts and operands, and a readable report of it.)doc"},
    {"equal", Kind::binary, R"doc(Whether ``a == b`` element-wise; a bool array.)doc"},
    {"erf", Kind::unary, R"doc(The Gauss error function of each element.)doc"},
    {"erfinv", Kind::unary,
     R"doc(The inverse of the error function of each element (defined on (-1, 1)).)doc"},
    {"exp", Kind::unary, R"doc(The exponential ``e**a`` of each element.)doc"},
    {"expand_dims", Kind::plain,
     R"doc(Inserts size-1 axes at the given positions.

Returns:
    array)doc"},
    {"expm1", Kind::unary, R"doc(``exp(a) - 1`` of each element, accurate for small ``a``.)doc"},
    {"export_function", Kind::plain,
     R"doc(Export a function to a file (or hand its graph to a callback).

The function is traced on placeholders shaped like the example inputs; the file holds the traced graph (the primitives with their parameters) and the arrays it captures (weights and other constants). :func:`import_function` reads it in any process.

Args:
    file_or_callback (str or Callable): The file path, or a callable that receives one dict describing the graph (``inputs``, ``keyword_names``, ``constants``, ``primitives``, ``outputs``, ``shapeless``, ``metadata``).
    fun (Callable): A function of zero or more arrays returning one or more arrays (a tree of them).
    *args (array): Example positional inputs, or one tuple / list of arrays and / or one dict of arrays.
    shapeless (bool, optional): Whether the imported function accepts inputs of other shapes (same ranks and dtypes). Default: ``False``.
    metadata (str, optional): Text stored with the function; ``import_function(..., return_metadata=True)`` returns it.
    **kwargs (array): Example keyword inputs; the imported function takes the same keywords.

Example:
    >>> def fun(x, y):
    ...     return x + y
    >>> mx.export_function("fun.mlxfn", fun, mx.array(1.0), y=mx.array([1.0, 2.0])))doc"},
    {"export_to_dot", Kind::plain,
     R"doc(Write the graph that computes the given arrays in Graphviz DOT format.

Args:
    file (str or file): A path or a text file object.
    *args (array): The arrays (or trees of arrays) whose graph to draw.
    **kwargs (array): Arrays to draw and label with their keyword.)doc"},
    {"exporter", Kind::plain,
     R"doc(Make a :class:`FunctionExporter` that exports several traces of ``fun`` to one file (one per input signature).

Args:
    file (str): The file path.
    fun (Callable): The function to trace.
    shapeless (bool, optional): Whether the traces accept inputs of other shapes. Default: ``False``.
    metadata (str, optional): Text stored with the function.

Returns:
    FunctionExporter

Example:
    >>> with mx.exporter("fun.mlxfn", lambda *a: sum(a)) as e:
    ...     e(mx.array(1))
    ...     e(mx.array(1), mx.array(2)))doc"},
    {"eye", Kind::plain,
     R"doc(A 2-D array with ones on a diagonal and zeros elsewhere.

Args:
    n (int): Rows.
    m (int, optional): Columns; ``n`` by default.
    k (int): Diagonal offset (positive above the main one). Default: ``0``.
    dtype (Dtype, optional): Default: ``float32``.

Returns:
    array)doc"},
    {"flatten", Kind::plain,
     R"doc(Merges the axes ``start_axis`` to ``end_axis`` into one.

Returns:
    array)doc"},
    {"flip", Kind::plain,
     R"doc(Reverses the order of elements along ``axis`` (all axes without one).

Returns:
    array: A view.)doc"},
    {"floor", Kind::unary,
     R"doc(The largest integer not greater than each element (integers pass through).)doc"},
    {"floor_divide", Kind::binary,
     R"doc(The element-wise quotient rounded towards minus infinity, ``a // b``.)doc"},
    {"from_fp8", Kind::plain,
     R"doc(Decodes fp8 E4M3 codes (uint8) into a floating-point dtype; every code converts exactly.

Args:
    x (array): uint8 codes.
    dtype (Dtype): The result type. Default: ``bfloat16``.

Returns:
    array: The decoded values.)doc"},
    {"full", Kind::plain,
     R"doc(An array of ``shape`` filled with ``vals`` (broadcast to it).

Args:
    shape (int or list(int)): The shape.
    vals (scalar or array): The fill value(s).
    dtype (Dtype, optional): Default: the dtype of ``vals``.

Returns:
    array)doc"},
    {"full_like", Kind::plain,
     R"doc(An array with the shape of ``a`` filled with ``vals``, in ``a``'s dtype or ``dtype``.)doc"},
    {"gather_mm", Kind::plain,
     R"doc(Matrix product with matrix-level gather: ``out[i] = a_flat[lhs_indices[i]] @ b_flat[rhs_indices[i]]`` where ``a_flat`` and ``b_flat`` are the stacks of matrices over the batch dimensions (all but the last two) of ``a`` and ``b``.

For ``a`` of shape ``(A1, ..., AS, M, K)`` ``lhs_indices`` holds flat indices in ``[0, A1 * ... * AS)``, and likewise ``rhs_indices`` for ``b``. A missing index array stands for all of its operand's matrices in order (shaped like its batch); the two broadcast together and the result has shape ``broadcast(lhs_indices, rhs_indices) + (M, N)``. Products are grouped by right-hand matrix, so each matrix of ``b`` is read once per call (the mixture-of-experts product). Out-of-range indices raise ``IndexError``.

Args:
    a (array): Input array.
    b (array): Input array.
    lhs_indices (array, optional): Integer indices for ``a``. Default: ``None``.
    rhs_indices (array, optional): Integer indices for ``b``. Default: ``None``.
    sorted_indices (bool, optional): Whether the indices are sorted (a hint). Default: ``False``.

Returns:
    array: The gathered products.)doc"},
    {"gather_qmm", Kind::plain,
     R"doc(:func:`quantized_matmul` with matrix-level gather, as :func:`gather_mm`: ``out[i] = x_flat[lhs_indices[i]] @ W_flat[rhs_indices[i]]`` over the batch dimensions of ``x`` and of the quantized ``w`` (``scales`` and ``biases`` are batched like ``w``). The products are grouped by quantized matrix, each group one product from the packed codes.

Args:
    x (array): Input array.
    w (array): Quantized matrices packed in ``uint32``.
    scales (array): Their scales.
    biases (array, optional): Their biases (affine). Default: ``None``.
    lhs_indices (array, optional): Integer indices for ``x``. Default: ``None``.
    rhs_indices (array, optional): Integer indices for ``w``. Default: ``None``.
    transpose (bool, optional): ``x @ w.T`` if ``True``, else ``x @ w``. Default: ``True``.
    group_size (int, optional): Default: the mode's.
    bits (int, optional): Default: the mode's.
    mode (str, optional): Default: ``"affine"``.
    global_scale (array, optional): nvfp4 only: the global scale of ``w``. Default: ``None``.
    sorted_indices (bool, optional): Whether the indices are sorted (a hint). Default: ``False``.

Returns:
    array: The gathered products.)doc"},
    {"gather_qqmm", Kind::plain,
     R"doc(:func:`qqmm` with matrix-level gather, as :func:`gather_mm`: ``x`` is quantized on the fly, ``w`` (a stack of matrices ``(..., N, K)``) is used as quantized when ``scales`` are given and quantized on the fly otherwise, and ``out[i] = x_flat[lhs_indices[i]] @ W_flat[rhs_indices[i]].T``.

Args:
    x (array): Input array.
    w (array): Weight matrices, quantized (``uint32``) or not.
    scales (array, optional): The scales of a quantized ``w``. Default: ``None``.
    lhs_indices (array, optional): Integer indices for ``x``. Default: ``None``.
    rhs_indices (array, optional): Integer indices for ``w``. Default: ``None``.
    group_size (int, optional): Default: the mode's.
    bits (int, optional): Default: the mode's.
    mode (str, optional): ``"nvfp4"``, ``"mxfp8"`` or ``"mxfp4"``. Default: ``"nvfp4"``.
    global_scale_x (array, optional): nvfp4 only: the global scale of ``x``. Default: ``None``.
    global_scale_w (array, optional): nvfp4 only: the global scale of ``w``. Default: ``None``.
    sorted_indices (bool, optional): Whether the indices are sorted (a hint). Default: ``False``.

Returns:
    array: The gathered products, in the dtype of ``x``.)doc"},
    {"greater", Kind::binary, R"doc(Whether ``a > b`` element-wise; a bool array.)doc"},
    {"greater_equal", Kind::binary, R"doc(Whether ``a >= b`` element-wise; a bool array.)doc"},
    {"hadamard_transform", Kind::plain,
     R"doc(The Walsh-Hadamard transform along the last axis: ``(hadamard(n) @ x) * scale``.

The length ``n`` must be ``m * 2^k`` with ``m`` in ``(1, 12, 20, 28)``; for ``m = 1`` the matrix is Sylvester's (``scipy.linalg.hadamard``), otherwise the Kronecker product of MLX's order-``m`` Hadamard matrix with Sylvester's. Computed in float32 (float64 for float64 inputs) with ``n log n`` additions.

Args:
    a (array): Input array or scalar; integers become float32.
    scale (float, optional): Scale of the output. Default: ``1 / sqrt(n)``, which makes the transform orthonormal.

Returns:
    array: The transformed array.)doc"},
    {"hamming", Kind::plain,
     R"doc(The Hamming window of ``M`` points (NumPy's definition), float32.)doc"},
    {"hanning", Kind::plain,
     R"doc(The Hann window of ``M`` points (NumPy's definition), float32.)doc"},
    {"identity", Kind::plain,
     R"doc(The ``n x n`` identity matrix.

Returns:
    array)doc"},
    {"imag", Kind::unary, R"doc(The imaginary part of each element (zeros for real inputs).)doc"},
    {"import_function", Kind::plain,
     R"doc(Import a function written by :func:`export_function` or :func:`exporter`.

The file is checked completely before anything is built: a truncated or malformed file raises ``RuntimeError`` naming the problem. The returned function takes inputs as the example inputs were given (positional and keyword arrays, or a tuple and / or a dict), runs the trace whose signature matches (a ``ValueError`` when none does) and returns a tuple of arrays. Its results are ordinary lazy arrays, so it composes with :func:`grad`, :func:`vmap` and :func:`compile`.

Args:
    file (str): The file path.
    return_metadata (bool, optional): Also return the stored metadata string. Default: ``False``.

Returns:
    Callable or tuple(Callable, str))doc"},
    {"inner", Kind::plain,
     R"doc(The inner product over the last axes of ``a`` and ``b``.

Returns:
    array)doc"},
    {"isclose", Kind::plain,
     R"doc(Whether ``|a - b| <= atol + rtol * |b|`` element-wise.

Args:
    a, b (array): Inputs (they broadcast).
    rtol (float): Relative tolerance. Default: ``1e-5``.
    atol (float): Absolute tolerance. Default: ``1e-8``.
    equal_nan (bool): Count NaNs in the same place as equal. Default: ``False``.

Returns:
    array: A bool array.)doc"},
    {"isfinite", Kind::unary,
     R"doc(Whether each element is finite (neither infinite nor NaN); a bool array.)doc"},
    {"isinf", Kind::unary,
     R"doc(Whether each element is positive or negative infinity; a bool array.)doc"},
    {"isnan", Kind::unary, R"doc(Whether each element is NaN; a bool array.)doc"},
    {"isneginf", Kind::unary, R"doc(Whether each element is negative infinity; a bool array.)doc"},
    {"isposinf", Kind::unary, R"doc(Whether each element is positive infinity; a bool array.)doc"},
    {"kron", Kind::plain,
     R"doc(The Kronecker product of two arrays.

Returns:
    array)doc"},
    {"left_shift", Kind::binary,
     R"doc(``a << b`` element-wise for integer arrays. Also available as ``mx.bitwise_left_shift``.)doc"},
    {"less", Kind::binary, R"doc(Whether ``a < b`` element-wise; a bool array.)doc"},
    {"less_equal", Kind::binary, R"doc(Whether ``a <= b`` element-wise; a bool array.)doc"},
    {"linalg.cholesky", Kind::plain,
     R"doc(The Cholesky factor L of a symmetric positive definite matrix (``A = L @ L.T``), or the upper factor with ``upper=True``.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    array)doc"},
    {"linalg.cholesky_inv", Kind::plain,
     R"doc(The inverse of a symmetric positive definite matrix from its Cholesky factor ``a`` (lower, or upper with ``upper=True``).

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    array)doc"},
    {"linalg.cross", Kind::plain,
     R"doc(The cross product of 3-vectors (or 2-vectors, giving the z component) along ``axis``.

Returns:
    array)doc"},
    {"linalg.det", Kind::plain,
     R"doc(The determinant of a square matrix (or of each matrix of a batch).

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    array

Example:
    >>> mx.linalg.det(mx.array([[1, 2], [3, 4]]), stream=mx.cpu)
    array(-2, dtype=float32))doc"},
    {"linalg.eig", Kind::plain,
     R"doc(The eigenvalues and eigenvectors (columns) of a general square matrix, as complex64.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    tuple(array, array): ``(w, v)``.)doc"},
    {"linalg.eigh", Kind::plain,
     R"doc(The eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    tuple(array, array): ``(w, v)``.)doc"},
    {"linalg.eigvals", Kind::plain,
     R"doc(The eigenvalues of a general square matrix, as complex64.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    array)doc"},
    {"linalg.eigvalsh", Kind::plain,
     R"doc(The eigenvalues of a symmetric (Hermitian) matrix in ascending order, from its lower (``UPLO='L'``) or upper triangle.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    array)doc"},
    {"linalg.inv", Kind::plain,
     R"doc(The inverse of a square matrix (or of each matrix of a batch). Singular matrices raise ValueError when evaluated.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    array)doc"},
    {"linalg.lu", Kind::plain,
     R"doc(The LU factorization with partial pivoting: ``a = L[p] @ U``.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    tuple(array, array, array): ``(p, L, U)``, the row permutation as indices.)doc"},
    {"linalg.lu_factor", Kind::plain,
     R"doc(The packed LU factorization of a square matrix (LAPACK's getrf): L below the diagonal (unit diagonal implied) and U on and above it, with the row pivots.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    tuple(array, array): ``(LU, pivots)``.)doc"},
    {"linalg.norm", Kind::plain,
     R"doc(Matrix or vector norm (NumPy's definitions).

Args:
    a (array): Input array.
    ord (int, float or str, optional): The norm: for vectors any p (``inf``, ``-inf``, 0 counts non-zeros), for matrices ``'fro'``, ``'nuc'``, ``inf``, ``-inf``, 1, -1, 2 or -2. Default: the 2-norm of the flattened array (Frobenius for matrices).
    axis (int or list(int), optional): One axis (vector norm) or two (matrix norm).
    keepdims (bool): Keep the reduced axes. Default: ``False``.

Returns:
    array: The norm(s).

Example:
    >>> mx.linalg.norm(mx.array([3.0, 4.0]))
    array(5, dtype=float32))doc"},
    {"linalg.pinv", Kind::plain,
     R"doc(The Moore-Penrose pseudo-inverse (through an SVD).

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    array)doc"},
    {"linalg.qr", Kind::plain,
     R"doc(The reduced QR factorization ``a = Q @ R``.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    tuple(array, array): ``(Q, R)``.)doc"},
    {"linalg.slogdet", Kind::plain,
     R"doc(The sign and the natural log of the absolute value of the determinant, which stays finite where the determinant itself would overflow.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    tuple(array, array): ``(sign, logabsdet)``.)doc"},
    {"linalg.solve", Kind::plain,
     R"doc(The solution x of ``a @ x = b`` for a square ``a``; a 1-D ``b`` is one right-hand side, otherwise its last axis holds several. Batches broadcast.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    array)doc"},
    {"linalg.solve_triangular", Kind::plain,
     R"doc(The solution x of ``a @ x = b`` for a triangular ``a`` (lower, or upper with ``upper=True``).

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    array)doc"},
    {"linalg.svd", Kind::plain,
     R"doc(The singular value decomposition ``a = U @ diag(S) @ Vt``.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Args:
    compute_uv (bool): Also return U and Vt. Default: ``True``.

Returns:
    tuple(array, array, array) or array: ``(U, S, Vt)``, or the singular values S (descending).)doc"},
    {"linalg.tri_inv", Kind::plain,
     R"doc(The inverse of a triangular matrix: the lower triangle is used, or the upper one with ``upper=True``.

The LAPACK-backed functions run on the CPU stream unless given a GPU one (cuSOLVER there); integer and bool matrices are promoted to float32, float32 and float64 are computed in their own precision.

Returns:
    array)doc"},
    {"linspace", Kind::plain,
     R"doc(``num`` evenly spaced values from ``start`` to ``stop``.

Args:
    start (scalar): The first value.
    stop (scalar): The last value, or the end of the interval with ``endpoint=False``.
    num (int): How many values. Default: ``50``.
    endpoint (bool): Include ``stop``. Default: ``True``.
    dtype (Dtype): The result type. Default: ``float32``.

Returns:
    array: The values.

Example:
    >>> mx.linspace(0, 1, 4, endpoint=False)
    array([0, 0.25, 0.5, 0.75], dtype=float32))doc"},
    {"log", Kind::unary, R"doc(The natural logarithm of each element.)doc"},
    {"log10", Kind::unary, R"doc(The base-10 logarithm of each element.)doc"},
    {"log1p", Kind::unary, R"doc(``log(1 + a)`` of each element, accurate for small ``a``.)doc"},
    {"log2", Kind::unary, R"doc(The base-2 logarithm of each element.)doc"},
    {"logaddexp", Kind::binary,
     R"doc(``log(exp(a) + exp(b))`` element-wise, computed without overflow.)doc"},
    {"logcumsumexp", Kind::scan,
     R"doc(The running ``log(sum(exp(a)))`` along ``axis``, computed stably.)doc"},
    {"logical_and", Kind::binary,
     R"doc(The element-wise logical AND (non-zero is True); a bool array.)doc"},
    {"logical_not", Kind::unary,
     R"doc(The logical negation of each element (non-zero is True); a bool array.)doc"},
    {"logical_or", Kind::binary,
     R"doc(The element-wise logical OR (non-zero is True); a bool array.)doc"},
    {"logical_xor", Kind::binary,
     R"doc(The element-wise logical XOR (non-zero is True); a bool array.)doc"},
    {"logsumexp", Kind::reduction,
     R"doc(``log(sum(exp(a)))`` over ``axis``, computed stably (the maximum is factored out).)doc"},
    {"matmul", Kind::plain,
     R"doc(The matrix product ``a @ b``, broadcasting batch dimensions; 1-D operands are treated as vectors.

Returns:
    array)doc"},
    {"matrix_transpose", Kind::plain,
     R"doc(Swaps the last two axes (the array API's transpose of a stack of matrices); ``a.mT`` is the same.

Returns:
    array: A view with the last two axes swapped. Inputs need at least two dimensions.)doc"},
    {"max", Kind::reduction, R"doc(The largest element over ``axis`` (NaN propagates).)doc"},
    {"maximum", Kind::binary, R"doc(The element-wise maximum; NaN propagates.)doc"},
    {"mean", Kind::reduction,
     R"doc(The arithmetic mean over ``axis`` (integer inputs give float32).)doc"},
    {"median", Kind::plain,
     R"doc(The median over ``axis``: the middle value of the sorted elements, the mean of the two middle ones for even counts. NaN propagates.

Returns:
    array: The median (float32 for integer inputs).)doc"},
    {"meshgrid", Kind::plain,
     R"doc(Coordinate grids from 1-D arrays (``indexing='xy'`` or ``'ij'``, NumPy's rules).

Returns:
    list(array))doc"},
    {"min", Kind::reduction, R"doc(The smallest element over ``axis`` (NaN propagates).)doc"},
    {"minimum", Kind::binary, R"doc(The element-wise minimum; NaN propagates.)doc"},
    {"minmax", Kind::plain,
     R"doc(The minimum and the maximum over ``axis`` in one call.

Args:
    a (array): Input array.
    axis (int or list(int), optional): Axes to reduce; all by default.
    keepdims (bool, optional): Keep the reduced axes. Default: ``False``.

Returns:
    tuple(array, array): ``(min, max)``.

Example:
    >>> mx.minmax(mx.array([3, 1, 2]))
    (array(1, dtype=int32), array(3, dtype=int32)))doc"},
    {"moveaxis", Kind::plain,
     R"doc(Moves axis ``source`` to position ``destination``, keeping the order of the others.

Returns:
    array: A view.)doc"},
    {"multiply", Kind::binary, R"doc(The element-wise product ``a * b``.)doc"},
    {"nan_to_num", Kind::plain,
     R"doc(Replaces NaN, positive and negative infinity with finite numbers.

Args:
    a (array): Input array.
    nan (float, optional): Replacement of NaN. Default: ``0``.
    posinf (float, optional): Replacement of +inf; default the dtype's largest value.
    neginf (float, optional): Replacement of -inf; default the dtype's lowest value.

Returns:
    array: ``a`` with the non-finite values replaced.)doc"},
    {"negative", Kind::unary, R"doc(The negation ``-a`` of each element.)doc"},
    {"not_equal", Kind::binary, R"doc(Whether ``a != b`` element-wise; a bool array.)doc"},
    {"ones", Kind::plain,
     R"doc(An array of ones.

Args:
    shape (int or list(int)): The shape.
    dtype (Dtype, optional): Default: ``float32``.

Returns:
    array)doc"},
    {"ones_like", Kind::plain,
     R"doc(An array of ones with the shape of ``a`` and its dtype (or ``dtype``).)doc"},
    {"outer", Kind::plain,
     R"doc(The outer product of the flattened ``a`` and ``b``.

Returns:
    array)doc"},
    {"pad", Kind::plain,
     R"doc(Pads ``a`` with ``constant_values`` (mode ``'constant'``) or its edge values (mode ``'edge'``); ``pad_width`` is one int, one (before, after) pair or a pair per axis.

Returns:
    array)doc"},
    {"partition", Kind::plain,
     R"doc(A copy with the ``kth`` element in its sorted position, smaller elements before it and larger after (in no particular order).

Returns:
    array)doc"},
    {"permute_dims", Kind::plain,
     R"doc(Permutes the axes (reverses them without ``axes``); the same as :func:`transpose`.

Returns:
    array: A view.)doc"},
    {"positive", Kind::unary,
     R"doc(The input itself (``+a``). Bool arrays are rejected, as in NumPy.)doc"},
    {"power", Kind::binary,
     R"doc(``a`` raised to the power ``b`` element-wise (integer powers of integers stay integers). Also available as ``mx.pow``.)doc"},
    {"prod", Kind::reduction, R"doc(The product of the elements over ``axis``.)doc"},
    {"put_along_axis", Kind::plain,
     R"doc(A copy of ``a`` with ``values`` written at ``indices`` along ``axis`` (the inverse of :func:`take_along_axis`).

Returns:
    array)doc"},
    {"qqmm", Kind::plain,
     R"doc(``x @ w.T`` with both operands quantized: ``x`` is quantized on the fly, ``w`` is used as quantized when ``scales`` are given (``group_size``, ``bits`` and ``mode`` must match its quantization) and quantized on the fly otherwise. The dequantized operands are multiplied in float32.

Gradients pass straight through the quantization of ``x`` and of an unquantized ``w`` (a ``w`` that should receive gradients must be given unquantized).

Args:
    x (array): Input array.
    w (array): Weight matrix ``(N, K)``, quantized (``uint32``) or not.
    scales (array, optional): The scales of a quantized ``w``. Default: ``None``.
    group_size (int, optional): Default: the mode's.
    bits (int, optional): Default: the mode's.
    mode (str, optional): ``"nvfp4"``, ``"mxfp8"`` or ``"mxfp4"``. Default: ``"nvfp4"``.
    global_scale_x (array, optional): nvfp4 only: the global scale of ``x``. Default: ``None``.
    global_scale_w (array, optional): nvfp4 only: the global scale of ``w``. Default: ``None``.

Returns:
    array: The product, in the dtype of ``x``.)doc"},
    {"quantize", Kind::plain,
     R"doc(Quantizes a matrix along its last axis in groups of ``group_size`` elements with ``bits`` bits per element, packing the codes into ``uint32`` words.

Affine: ``s = (max - min) / (2^bits - 1)``, ``b = min``, ``q = round((w - b) / s)``. mxfp4 / mxfp8: the scale is the smallest power of two ``2^e`` with ``amax / 2^e`` at most 6 (448), elements are rounded to E2M1 (nearest, ties toward zero) or E4M3 (nearest even). nvfp4: the scale is E4M3 of ``amax / 6`` (times ``2688 / global_scale`` when given).

Modes (group sizes; bits; scales): ``"affine"`` (32, 64*, 128; 1, 2, 3, 4*, 5, 6, 8; a scale and a bias per group in the input's dtype), ``"mxfp4"`` (32; 4; uint8 E8M0), ``"mxfp8"`` (32; 8; uint8 E8M0), ``"nvfp4"`` (16; 4; uint8 E4M3, optionally relative to a float32 ``global_scale``). * marks the defaults. The mx and nv modes store E2M1 (fp4) or E4M3 (fp8) elements and have no biases. Codes are packed little-endian into ``uint32`` words (the first element in the lowest bits), as MLX packs them.

Args:
    w (array): The matrix to quantize (rank >= 2, float16, bfloat16 or float32).
    group_size (int, optional): Elements per scale. Default: the mode's.
    bits (int, optional): Bits per element. Default: the mode's.
    mode (str, optional): ``"affine"``, ``"mxfp4"``, ``"mxfp8"`` or ``"nvfp4"``. Default: ``"affine"``.
    global_scale (array, optional): nvfp4 only: a float32 scale of the whole tensor. Default: ``None``.

Returns:
    tuple(array, ...): The packed codes, the scales and (affine only) the biases.)doc"},
    {"quantized_matmul", Kind::plain,
     R"doc(``x @ dequantize(w, scales, biases).T`` (or without the transpose when ``transpose=False``) computed from the packed codes without materializing the dequantized matrix. Biases are given for the affine mode only.

Modes (group sizes; bits; scales): ``"affine"`` (32, 64*, 128; 1, 2, 3, 4*, 5, 6, 8; a scale and a bias per group in the input's dtype), ``"mxfp4"`` (32; 4; uint8 E8M0), ``"mxfp8"`` (32; 8; uint8 E8M0), ``"nvfp4"`` (16; 4; uint8 E4M3, optionally relative to a float32 ``global_scale``). * marks the defaults. The mx and nv modes store E2M1 (fp4) or E4M3 (fp8) elements and have no biases. Codes are packed little-endian into ``uint32`` words (the first element in the lowest bits), as MLX packs them.

Args:
    x (array): Input array.
    w (array): The packed quantized matrix.
    scales (array): Its scales.
    biases (array, optional): Its biases (affine). Default: ``None``.
    transpose (bool, optional): ``x @ w.T`` if ``True``, else ``x @ w``. Default: ``True``.
    group_size (int, optional): Default: the mode's.
    bits (int, optional): Default: the mode's.
    mode (str, optional): Default: ``"affine"``.

Returns:
    array: The product, in the dtype of ``x`` (promoted with the scales' for affine).)doc"},
    {"radians", Kind::unary, R"doc(Each element converted from degrees to radians.)doc"},
    {"real", Kind::unary, R"doc(The real part of each element.)doc"},
    {"reciprocal", Kind::unary, R"doc(The reciprocal ``1 / a`` of each element.)doc"},
    {"remainder", Kind::binary,
     R"doc(The element-wise remainder ``a % b`` with the sign of ``b`` (as Python and NumPy).)doc"},
    {"repeat", Kind::plain,
     R"doc(Each element repeated ``repeats`` times along ``axis`` (the flattened array without one).

Returns:
    array)doc"},
    {"reshape", Kind::plain,
     R"doc(The elements of ``a`` in a new shape (one dimension may be -1 and is inferred). A view when the layout allows.

Returns:
    array)doc"},
    {"result_type", Kind::plain,
     R"doc(The dtype that promoting the given arrays, dtypes and scalars gives (MLX's rules: Python scalars are weak).)doc"},
    {"right_shift", Kind::binary,
     R"doc(``a >> b`` element-wise for integer arrays. Also available as ``mx.bitwise_right_shift``.)doc"},
    {"roll", Kind::plain,
     R"doc(Shifts elements along ``axis`` (the flattened array without one); elements pushed past the end come back at the start.

Returns:
    array)doc"},
    {"round", Kind::plain,
     R"doc(Rounds to the given number of decimals, halves to even (as NumPy).

Args:
    a (array): Input array.
    decimals (int, optional): Decimal places (negative rounds to tens, hundreds, ...). Default: ``0``.

Returns:
    array: The rounded values, in ``a``'s dtype.

Example:
    >>> mx.round(mx.array([0.5, 1.5, 2.675]), 2)
    array([0.5, 1.5, 2.67], dtype=float32))doc"},
    {"rsqrt", Kind::unary, R"doc(The reciprocal square root ``1 / sqrt(a)`` of each element.)doc"},
    {"save_gguf", Kind::plain,
     R"doc(Save arrays to a GGUF file with metadata.

Args:
    file (str): The file path (``.gguf`` is appended when missing).
    arrays (dict(str, array)): The arrays; float32, float16, bfloat16, float64 and int8 to int64 are written as they are; other dtypes raise ``ValueError``.
    metadata (dict(str, Union[array, str, list(str)])): Values stored in the header: strings, lists of strings, or arrays (scalars become a number of the array's type, 1-D arrays a GGUF array).)doc"},
    {"searchsorted", Kind::plain,
     R"doc(Where to insert ``values`` into ``sorted_sequence`` to keep it sorted.

Args:
    sorted_sequence (array): A 1-D array in ascending order.
    values (array or scalar): The values to look up, any shape.
    side (str): ``'left'`` gives the number of elements strictly less than each value, ``'right'`` the number less than or equal. Default: ``'left'``.

Returns:
    array: uint32 indices in ``[0, len(sorted_sequence)]``, shaped like ``values``.

Example:
    >>> mx.searchsorted(mx.array([1, 2, 2, 4]), mx.array([2, 3]))
    array([1, 3], dtype=uint32))doc"},
    {"segmented_mm", Kind::plain,
     R"doc(Matrix product over segments of the inner dimension: for ``a`` of shape ``(M, K)``, ``b`` of shape ``(K, N)`` and ``segments`` of shape ``(..., 2)`` holding ``[start, end)`` offsets into ``K``, ``out[...] = a[:, start:end] @ b[start:end, :]``.

Empty (or reversed) segments give zeros; offsets outside ``[0, K]`` raise ``IndexError``.

Args:
    a (array): Input array of shape ``(M, K)``.
    b (array): Input array of shape ``(K, N)``.
    segments (array): Integer ``[start, end)`` pairs.

Returns:
    array: The product of each segment, of shape ``segments.shape[:-1] + (M, N)``.)doc"},
    {"sigmoid", Kind::unary,
     R"doc(The logistic sigmoid ``1 / (1 + exp(-a))`` of each element.)doc"},
    {"sign", Kind::unary,
     R"doc(The sign of each element: -1, 0 or 1 (``a / |a|`` for complex inputs, 0 at 0).)doc"},
    {"sin", Kind::unary, R"doc(The sine of each element (radians).)doc"},
    {"sinh", Kind::unary, R"doc(The hyperbolic sine of each element.)doc"},
    {"slice", Kind::plain,
     R"doc(``a[start_indices : start_indices + slice_size]`` along ``axes``, where the start may be an array (computed at run time).

Returns:
    array)doc"},
    {"slice_update", Kind::plain,
     R"doc(A copy of ``a`` with ``update`` written at ``start_indices`` along ``axes``.

Returns:
    array)doc"},
    {"softmax", Kind::plain,
     R"doc(``exp(a) / sum(exp(a))`` over ``axis``, computed stably.

Args:
    precise (bool): For half-precision inputs, accumulate in float32. Default: ``False``.

Returns:
    array: Probabilities that sum to 1 over ``axis``.)doc"},
    {"sort", Kind::plain,
     R"doc(The elements sorted in ascending order along ``axis`` (the flattened array with ``axis=None``); the sort is stable and NaNs go last.

Returns:
    array)doc"},
    {"split", Kind::plain,
     R"doc(Splits ``a`` along ``axis`` into equal parts (an int) or at the given indices (a list).

Returns:
    list(array))doc"},
    {"sqrt", Kind::unary, R"doc(The square root of each element (NaN for negative reals).)doc"},
    {"square", Kind::unary, R"doc(The square ``a * a`` of each element.)doc"},
    {"squeeze", Kind::plain,
     R"doc(Removes size-1 axes (the given ones, or all).

Returns:
    array)doc"},
    {"stack", Kind::plain,
     R"doc(Joins arrays of the same shape along a new axis.

Returns:
    array)doc"},
    {"std", Kind::plain,
     R"doc(The standard deviation over ``axis``: the square root of :func:`var` (same arguments, including ``ddof`` and ``correction``).

Returns:
    array: The standard deviation.)doc"},
    {"stop_gradient", Kind::unary,
     R"doc(The input unchanged, but transforms treat it as a constant: no gradient flows through it.)doc"},
    {"subtract", Kind::binary, R"doc(The element-wise difference ``a - b``.)doc"},
    {"sum", Kind::reduction, R"doc(The sum of the elements over ``axis``.)doc"},
    {"swapaxes", Kind::plain,
     R"doc(Swaps two axes.

Returns:
    array: A view.)doc"},
    {"take", Kind::plain,
     R"doc(Elements of ``a`` at ``indices`` along ``axis`` (of the flattened array without an axis). Negative indices count from the end.

Returns:
    array)doc"},
    {"take_along_axis", Kind::plain,
     R"doc(``a`` indexed along ``axis`` by an index array of the same rank, which broadcasts with ``a`` on the other axes (NumPy's take_along_axis).

Returns:
    array)doc"},
    {"tan", Kind::unary, R"doc(The tangent of each element (radians).)doc"},
    {"tanh", Kind::unary, R"doc(The hyperbolic tangent of each element.)doc"},
    {"tensordot", Kind::plain,
     R"doc(Sums products over the given axes of ``a`` and ``b`` (or the last / first ``axes`` of them).

Returns:
    array)doc"},
    {"tile", Kind::plain,
     R"doc(``a`` repeated ``reps`` times along each axis.

Returns:
    array)doc"},
    {"to_fp8", Kind::plain,
     R"doc(Converts a floating-point array to fp8 E4M3 codes: rounded to nearest even, saturating at +-448 (E4M3 has no infinity), NaN becomes 0x7F.

Returns:
    array: The codes as uint8, shaped like ``x``.)doc"},
    {"topk", Kind::plain,
     R"doc(The ``k`` largest elements along ``axis`` (in no particular order).

Returns:
    array)doc"},
    {"trace", Kind::plain,
     R"doc(The sum of a diagonal of ``a`` (of the matrices formed by ``axis1`` and ``axis2``).

Args:
    offset (int): Diagonal offset (positive above the main diagonal). Default: ``0``.
    dtype (Dtype, optional): The accumulation and result type.

Returns:
    array: The traces.)doc"},
    {"transpose", Kind::plain,
     R"doc(Permutes the axes (reverses them without ``axes``). Also available as ``mx.permute_dims``.

Returns:
    array: A view.)doc"},
    {"tri", Kind::plain,
     R"doc(An ``n x m`` array with ones at and below diagonal ``k`` and zeros above.

Returns:
    array)doc"},
    {"tril", Kind::plain,
     R"doc(A copy with the elements above diagonal ``k`` set to zero.

Returns:
    array)doc"},
    {"triu", Kind::plain,
     R"doc(A copy with the elements below diagonal ``k`` set to zero.

Returns:
    array)doc"},
    {"trunc", Kind::unary, R"doc(Each element rounded towards zero.)doc"},
    {"unflatten", Kind::plain,
     R"doc(Splits ``axis`` into the dimensions of ``shape`` (one may be -1).

Returns:
    array)doc"},
    {"unique", Kind::plain,
     R"doc(The sorted distinct elements of the flattened ``a``, in an output of fixed ``size`` (the shape never depends on the values, so nothing is evaluated).

Args:
    a (array): Input array (NaNs count as one value).
    size (int): Length of the output: fewer distinct elements are padded with ``fill_value``, more are truncated to the smallest ``size``.
    return_index (bool): Also return the flat index of each value's first occurrence.
    return_inverse (bool): Also return, for each element of ``a``, the index of its value (clamped to ``size - 1`` when truncated).
    return_counts (bool): Also return how often each value occurs (0 in the padding).
    fill_value (scalar, optional): The padding; by default the smallest element.

Returns:
    array or tuple(array, ...): The values, then index, inverse and counts (uint32) as asked.

Example:
    >>> mx.unique(mx.array([3, 1, 3]), 3, fill_value=0)
    array([1, 3, 0], dtype=int32))doc"},
    {"unstack", Kind::plain,
     R"doc(Splits ``x`` along ``axis`` into arrays with that axis removed.

Returns:
    list(array))doc"},
    {"var", Kind::plain,
     R"doc(The variance over ``axis``: the mean squared deviation from the mean, divided by ``N - ddof``.

Args:
    a (array): Input array.
    axis (int or list(int), optional): Axes to reduce; all by default.
    keepdims (bool, optional): Keep the reduced axes. Default: ``False``.
    ddof (int, optional): Delta degrees of freedom. Default: ``0``.
    correction (int, optional): The array API's name for ``ddof``; when given it wins.

Returns:
    array: The variance.)doc"},
    {"vecdot", Kind::plain,
     R"doc(``sum(conj(a) * b)`` along ``axis``.

Returns:
    array)doc"},
    {"view", Kind::plain,
     R"doc(The bytes of ``a`` read as ``dtype``; a different item size rescales the last axis.

Returns:
    array)doc"},
    {"where", Kind::plain,
     R"doc(Picks ``x`` where ``condition`` is true and ``y`` elsewhere; the three broadcast together.

Args:
    condition (array): Selector (non-zero is true).
    x (array or scalar): Values where the condition holds.
    y (array or scalar): Values elsewhere.

Returns:
    array: The selection, in the promoted dtype of ``x`` and ``y``.

Example:
    >>> mx.where(mx.array([True, False]), 1, mx.array([5, 6]))
    array([1, 6], dtype=int32))doc"},
    {"zeros", Kind::plain,
     R"doc(An array of zeros. ``mx.empty`` is the same function: arrays always hold defined values.

Args:
    shape (int or list(int)): The shape.
    dtype (Dtype, optional): Default: ``float32``.

Returns:
    array)doc"},
    {"zeros_like", Kind::plain,
     R"doc(An array of zeros with the shape of ``a`` and its dtype (or ``dtype``). ``mx.empty_like`` is the same function: arrays always hold defined values.)doc"},
};

}  // namespace

const char* docstring(std::string_view name) {
  auto it = std::lower_bound(std::begin(kDocs), std::end(kDocs), name,
                             [](const Entry& e, std::string_view n) { return e.name < n; });
  if (it == std::end(kDocs) || it->name != name) {
    return "";
  }
  if (it->kind == Kind::plain) {
    return it->text;
  }
  // Assembled once per name; registration runs under the GIL, and the strings live on.
  static std::unordered_map<std::string_view, std::string> assembled;
  auto [pos, added] = assembled.try_emplace(name);
  if (added) {
    pos->second = std::string(it->text) + "\n\n" + shared_section(it->kind);
    if (it->example) {
      pos->second += std::string("\n\n") + it->example;
    }
  }
  return pos->second.c_str();
}

}  // namespace mlx::core::python
