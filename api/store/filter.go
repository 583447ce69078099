package store

import (
	"sort"
	"strconv"
	"strings"
)

// dialect is what the SQL of the two databases differs in, for the one
// list filter: the placeholder of the nth argument and the substring test.
type dialect struct {
	placeholder func(n int) string
	contains    string // a function of (haystack, needle), > 0 when found
}

var (
	sqliteDialect   = dialect{placeholder: func(int) string { return "?" }, contains: "instr"}
	postgresDialect = dialect{placeholder: func(n int) string { return "$" + strconv.Itoa(n) }, contains: "strpos"}
)

// listFilter returns a WHERE clause requiring every label pair, the status
// and the name part (a plain, case-sensitive substring) of opt, and its
// arguments.
func listFilter(opt ListOptions, d dialect) (string, []any) {
	keys := make([]string, 0, len(opt.Labels))
	for k := range opt.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return d.placeholder(len(args))
	}
	for _, k := range keys {
		conds = append(conds, `id IN (SELECT run_id FROM run_labels WHERE key = `+arg(k)+` AND value = `+arg(opt.Labels[k])+`)`)
	}
	if opt.Status != "" {
		conds = append(conds, `status = `+arg(string(opt.Status)))
	}
	if opt.Name != "" {
		conds = append(conds, d.contains+`(name, `+arg(opt.Name)+`) > 0`)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}
