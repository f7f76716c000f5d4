"""MLX for Linux: lazy arrays (mlx.core), neural networks (mlx.nn) and optimizers."""
