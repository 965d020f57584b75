"""Rendering: a request from storage lookup to stored files (pipeline), the figure stage
(figures: the models over HTTP, the mask), the render pool of worker processes (pool,
pool_worker) and the typed tasks they run (tasks), the motion table (catalogue), and the
geometry between the upload's pixels and the models'."""
