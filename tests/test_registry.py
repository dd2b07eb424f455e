"""Registry-wide invariants: every op is fully declared, so shape inference, folding, CSE and
pruning can rely on it."""
import pytest

from graphtool.ops import FAMILIES, registry

# Ops that tests register for themselves (family "test") are not dftool's.
ALL_OPS = sorted(name for name, spec in registry.all_ops().items() if spec.family != "test")

# The op set the Foundation issue requires at the least (plus whatever the TF fixtures use, which
# tests/test_tf_fixtures.py checks by loading them).
REQUIRED = """
Placeholder PlaceholderWithDefault Const Identity IdentityN NoOp StopGradient PreventGradient Snapshot
Add AddV2 Sub Mul Div RealDiv FloorDiv FloorMod Mod TruncateDiv Pow Maximum Minimum SquaredDifference Atan2
Abs Neg Sign Square Sqrt Rsqrt Reciprocal Exp Expm1 Log Log1p Sin Cos Tan Tanh Sigmoid Erf Lgamma Floor Ceil
Round Rint Equal NotEqual Less LessEqual Greater GreaterEqual LogicalAnd LogicalOr LogicalNot AddN Cast
Select SelectV2 Sum Mean Max Min Prod All Any ArgMax ArgMin MatMul BatchMatMul BatchMatMulV2 BatchMatMulV3
Einsum Shape ShapeN Size Rank Reshape Transpose ExpandDims Squeeze ConcatV2 Concat Split SplitV Slice
StridedSlice Pack Unpack Tile Pad PadV2 MirrorPad GatherV2 GatherNd ScatterNd Fill Range ZerosLike OnesLike
BroadcastTo BroadcastArgs BroadcastGradientArgs ReverseV2 OneHot Cumsum Cumprod TopKV2 Where
UnsortedSegmentSum MatrixBandPart InvertPermutation BiasAdd BiasAddGrad Relu Relu6 Elu Selu LeakyRelu
Softplus Softsign Softmax LogSoftmax Conv2D DepthwiseConv2dNative Conv2DBackpropInput Conv2DBackpropFilter
MaxPool AvgPool MaxPoolGrad AvgPoolGrad FusedBatchNorm FusedBatchNormV2 FusedBatchNormV3 FusedBatchNormGrad
FusedBatchNormGradV3 LRN SoftmaxCrossEntropyWithLogits SparseSoftmaxCrossEntropyWithLogits ResizeBilinear
ResizeNearestNeighbor ReluGrad Relu6Grad TanhGrad SigmoidGrad RsqrtGrad SqrtGrad Switch RefSwitch Merge
Enter RefEnter Exit NextIteration LoopCond ControlTrigger TensorArrayV3 TensorArrayReadV3
TensorArrayWriteV3 TensorArrayGatherV3 TensorArrayScatterV3 TensorArraySizeV3 TensorArrayCloseV3
TensorArrayConcatV3 TensorArraySplitV3 TensorArrayGradV3 StackV2 StackPushV2 StackPopV2 _Send _Recv _Arg
_Retval
""".split()


@pytest.mark.parametrize("op", REQUIRED)
def test_required_op_is_registered(op):
    assert registry.lookup(op) is not None, f"{op} is not registered"


@pytest.mark.parametrize("op", ALL_OPS)
def test_op_is_fully_declared(op):
    spec = registry.get(op)
    assert spec.shape_fn is not None, f"{op} has no shape function"
    assert spec.family in FAMILIES, f"{op} is registered outside a family module ({spec.family})"
    for arg in spec.inputs + spec.outputs:
        for attr in (arg.type_attr, arg.number_attr, arg.type_list_attr):
            assert attr is None or attr in spec.attrs, f"{op}.{arg.name} refers to undeclared attr {attr}"
        assert sum(x is not None for x in (arg.fixed_type, arg.type_attr, arg.type_list_attr)) == 1
    for attr in spec.attrs.values():
        if attr.has_default and attr.allowed is not None and attr.kind == "type":
            assert attr.default in attr.allowed, f"{op}.{attr.name}: default not among allowed types"


def test_flags_reflect_side_effects():
    assert registry.get("StackPushV2").stateful and registry.get("_Recv").is_async
    assert registry.get("Merge").control_flow and not registry.get("Add").stateful
    assert registry.get("Add").commutative and not registry.get("Sub").commutative
