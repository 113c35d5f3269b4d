-- The runner's question on every tick: which running enrollments of this workspace are due now?
-- (shared/engine/plan.ts dueEnrollments: status = 'IN_PROGRESS' AND nextActionAt <= now, ordered by
-- nextActionAt.) Without this index PostgreSQL read every enrollment of the workspace's running
-- campaigns; with it a quiet tick is one index probe that finds nothing. The key matches what
-- cond-sql.ts generates: text equality on status, then nextActionAt compared and sorted with
-- COLLATE "C", nulls first in ascending order. Not partial on status: the runner's statement is
-- prepared, and a generic plan cannot prove a partial predicate from a parameter.
CREATE INDEX enrollments_due ON documents (workspace_id, (doc->>'status'), ((doc->>'nextActionAt') COLLATE "C") NULLS FIRST)
  WHERE collection = 'enrollments' AND NOT deleted;
