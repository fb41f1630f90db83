// Package dashbench holds the benchmark of the admin dashboard on a large
// Postgres store; it has no code of its own.
package dashbench
