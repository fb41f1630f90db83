-- Declared queues (core.QueueDeclarer): CreateQueue sets declared; a config
-- stored with PutQueueConfig leaves it alone, DeleteQueue removes the row.
-- Adding a column with a constant default rewrites nothing, and earlier
-- builds never name the column, so this is safe while they run.
ALTER TABLE {s}queue_configs ADD COLUMN declared integer NOT NULL DEFAULT 0;
