-- 0024_channel_tries (SQLite): how often the hub has fetched the batch at
-- a bot's committed offset without committing it. The leader counts a try
-- before it acts on a batch, so a batch that crashes the process or fails its
-- commit is counted across restarts; past the limit its first update is
-- committed as poisoned (mirrored, audited, skipped) instead of fetched again
-- forever.
ALTER TABLE channel_offsets ADD COLUMN tried_offset INTEGER NOT NULL DEFAULT -1;
ALTER TABLE channel_offsets ADD COLUMN tries INTEGER NOT NULL DEFAULT 0;
