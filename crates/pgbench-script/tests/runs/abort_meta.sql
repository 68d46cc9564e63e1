SELECT 1;
\set i 1 / 0
