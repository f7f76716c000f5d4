"""Neural networks on mlx.core: Module, layers, losses, initializers and
``value_and_grad`` over a model's trainable parameters."""

from mlx.nn import init, losses
from mlx.nn.layers import *  # noqa: F401,F403
from mlx.nn.utils import average_gradients, checkpoint, value_and_grad
