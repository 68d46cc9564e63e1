\set n NULL
\set b true
\set d 2.0 / 3
\set big 1e20
\set i -42
SELECT :n::text, :b, :d, :big, :i;
select 7 as "w" \gset p_
SELECT :p_w::text, :{?x}, x.y FROM (SELECT 1 AS y) x WHERE :i < 0 AND :i::int IS NOT NULL;
SELECT :undefined::text;
SELECT :s::text, :t::text, :e::text, :hex::text;
