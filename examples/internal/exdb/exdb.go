// Package exdb gives the examples that keep their queue in an SQLite file
// the default of their -db flag: a file in a fresh temporary folder that is
// removed when the example ends. Opening the store stays in each example,
// where its reader sees it.
package exdb

import (
	"os"
	"path/filepath"
)

// SQLiteFile returns the SQLite file an example keeps its queue in. When
// path is set it returns path unchanged and a remove that does nothing:
// the file is the user's and outlives the run. When path is empty it makes
// a new temporary folder whose name starts with prefix and returns the file
// queue.db inside it (not yet created), with a remove that deletes the
// folder and all in it. remove is nil only when err is not; call it once
// the store is closed.
func SQLiteFile(path, prefix string) (file string, remove func(), err error) {
	if path != "" {
		return path, func() {}, nil
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(dir, "queue.db"), func() { os.RemoveAll(dir) }, nil
}
