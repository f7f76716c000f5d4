"""Sequential: a chain of callables."""

from mlx.nn.layers.base import Module


class Sequential(Module):
    """Calls its layers in order, each on the previous one's output.

    Layers may be Modules or plain callables (``nn.relu``); they are kept in the list
    ``layers``, so their parameters appear as ``layers.0.weight``, ...
    """

    def __init__(self, *modules):
        super().__init__()
        self.layers = list(modules)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
