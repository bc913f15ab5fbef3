-- PostgreSQL drops the foreign keys of the two tables every click writes in this change
-- (see migrations/postgres). On SQLite the tables keep them: SQLite can drop a foreign
-- key only by rebuilding the table. The change is empty here so that both folders number
-- the same changes the same way.
SELECT 1;
