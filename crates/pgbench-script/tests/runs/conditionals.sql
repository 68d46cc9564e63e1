\set r random(1, 6)
\if :r <= 2
  SELECT 'low', :r;
\elif :r = 3 OR :r = 4
  SELECT 'mid', :r;
  \if :r = 4
    SELECT 'four';
  \endif
\else
  SELECT 'high', :r;
\endif
\set n debug(CASE WHEN :r % 2 = 0 THEN :r IS NULL ELSE :r > 5 END)
