\set i 5
SELECT 1 \; SELECT :i::int \; SELECT 3;
\; SELECT :i \; SELECT 'x';
SELECT ';' AS "a;b", $$;:i$$, E'\';:i', /* ; :i */ :i -- ; :i
;
SELECT :undefined::int;
