package mem

// chunked is a list stored in chunks of a fixed size, so that growing it
// never copies what it holds: a plain slice that grows by a quarter at a
// time allocates about four times its final size on the way, all of it
// garbage, and the indexes of a store that holds millions of jobs are the
// largest slices it has.
type chunked[T any] struct {
	c [][]T // every chunk holds chunkLen items
	n int
}

const (
	chunkBits = 10
	chunkLen  = 1 << chunkBits
)

func (l *chunked[T]) len() int { return l.n }

// at returns the address of item i, which must be below len.
func (l *chunked[T]) at(i int) *T { return &l.c[i>>chunkBits][i&(chunkLen-1)] }

// push appends v.
func (l *chunked[T]) push(v T) {
	if l.n == len(l.c)*chunkLen {
		l.c = append(l.c, make([]T, chunkLen))
	}
	*l.at(l.n) = v
	l.n++
}

// pop drops the last item, releasing a chunk once a whole spare one
// follows the end.
func (l *chunked[T]) pop() {
	l.n--
	var zero T
	*l.at(l.n) = zero
	if used := (l.n + chunkLen - 1) >> chunkBits; len(l.c) > used+1 {
		l.c[len(l.c)-1] = nil
		l.c = l.c[:len(l.c)-1]
	}
}

// truncate drops every item from n on.
func (l *chunked[T]) truncate(n int) {
	for l.n > n {
		l.pop()
	}
}
