"""The DFJSP environments: env, vector env, features, kernels, batches and rendering."""
