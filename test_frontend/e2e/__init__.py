"""e2e - helpers of the end-to-end tests (export, datasets, tools, compare)."""
