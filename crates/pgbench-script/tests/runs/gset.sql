SELECT \gset
SELECT 0 AS i0 \gset
\set i debug(:i0)
SELECT 1 AS i1, 2 AS i2 \gset
\set i debug(:i1 + :i2 * 10)
SELECT 3 AS i3 \gset x_
\set i debug(:x_i3)
SELECT 0 AS i4, 4 AS i4 \gset
\set i debug(:i4)
\; \; SELECT 0 AS i5 \; SELECT 5 AS i5 \; \; \gset
\set i debug(:i5)
\; SELECT 6 AS i6 \; SELECT 7 AS i7 \; \aset
SELECT 8 AS i6 UNION SELECT 9 ORDER BY 1 DESC \aset
\set i debug(:i6 * 10 + :i7)
SELECT 1.5 AS fl, 'yes' AS yn, NULL AS nu, ' 12 ' AS sp \gset
\set i debug(:fl * 2)
\set i debug(:yn)
\set i debug(:sp + 1)
\setshell s echo 4294967297
\set i debug(:s)
\setshell s echo " -17  "
\set i debug(:s)
