-- Declared queues (core.QueueDeclarer): CreateQueue sets declared; a config
-- stored with PutQueueConfig leaves it alone, DeleteQueue removes the row.
-- Earlier builds never name the column, so they keep working.
ALTER TABLE {s}queue_configs ADD COLUMN declared integer NOT NULL DEFAULT 0;
