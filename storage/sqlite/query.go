package sqlite

import "context"

// queryAll runs the read query q on d and scans every row with scan; op names the operation in
// errors.
func queryAll[T any](ctx context.Context, d *dbs, op, q string, args []any, scan func(rowScanner) (T, error)) ([]T, error) {
	st, err := d.read(ctx, q)
	if err != nil {
		return nil, fail(ctx, err, "%s", op)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fail(ctx, err, "%s", op)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fail(ctx, err, "%s", op)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "%s", op)
	}
	return out, nil
}
