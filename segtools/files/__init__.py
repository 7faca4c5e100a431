"""Files: from user paths to log dirs and segments, and the small files of a log dir
(indexes, checkpoints, producer snapshots, metadata files), plus output files."""
