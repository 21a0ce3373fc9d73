-- 0011_channels (PostgreSQL): the channel hub. channel_offsets holds each
-- bot's next getUpdates offset and the fence of the leader allowed to move
-- it: a new leader bumps the fence, so a deposed one can no longer commit.
-- conversation_events mirrors every inbound update once (its update_id is
-- the key); outbound_messages is the hub's outbox, written in the
-- transaction of the decision that causes a message and delivered by the
-- leader's sender; conversation_runs ties a run to the chat that started it
-- and its progress message.
CREATE TABLE channel_offsets (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  bot          TEXT NOT NULL,
  next_offset  BIGINT NOT NULL DEFAULT 0,
  fence        BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, bot)
);
CREATE TABLE conversation_events (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  bot          TEXT NOT NULL,
  update_id    BIGINT NOT NULL,
  kind         TEXT NOT NULL,
  chat_id      TEXT NOT NULL,
  user_id      TEXT NOT NULL,
  text         TEXT NOT NULL,
  action       TEXT NOT NULL,
  run_id       TEXT,
  received_at  TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (project_id, bot, update_id)
);
CREATE TABLE outbound_messages (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  msg_id       TEXT NOT NULL,
  bot          TEXT NOT NULL,
  chat_id      TEXT NOT NULL,
  method       TEXT NOT NULL CHECK (method IN ('send','edit','answer')),
  purpose      TEXT NOT NULL,
  text         TEXT NOT NULL,
  markup       TEXT,
  target_id    TEXT,
  run_id       TEXT,
  fingerprint  TEXT,
  state        TEXT NOT NULL CHECK (state IN ('pending','sent','failed','deduplicated','silenced')),
  attempts     INTEGER NOT NULL DEFAULT 0,
  next_at      TIMESTAMPTZ NOT NULL,
  tg_message_id BIGINT,
  error        TEXT,
  created_at   TIMESTAMPTZ NOT NULL,
  sent_at      TIMESTAMPTZ,
  PRIMARY KEY (project_id, msg_id)
);
CREATE INDEX outbound_pending ON outbound_messages (project_id, next_at) WHERE state = 'pending';
CREATE TABLE conversation_runs (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  run_id       TEXT NOT NULL,
  bot          TEXT NOT NULL,
  chat_id      TEXT NOT NULL,
  progress_id  BIGINT,
  last_text    TEXT NOT NULL DEFAULT '',
  prompted     INTEGER NOT NULL DEFAULT 0,
  done         INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, run_id)
);
CREATE INDEX conversation_runs_open ON conversation_runs (project_id) WHERE done = 0;
ALTER TABLE channel_offsets ENABLE ROW LEVEL SECURITY;
ALTER TABLE channel_offsets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON channel_offsets
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE conversation_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE conversation_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON conversation_events
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE outbound_messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE outbound_messages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON outbound_messages
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE conversation_runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE conversation_runs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON conversation_runs
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
