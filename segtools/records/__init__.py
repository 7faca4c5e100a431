"""Records: the batches and records of ``.log`` segments, one batch walk and one record decoder
with two faces (objects and Arrow tables; Python and its numba twin)."""
