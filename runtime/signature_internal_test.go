package boson

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

type shapeNode struct {
	Value    int         `json:"value"`
	Next     *shapeNode  `json:"next,omitempty"`
	Children []shapeNode `json:"children"`
	Index    map[string]*shapeNode
	hidden   int
	Skipped  string `json:"-"`
}

type shapeA struct{ B *shapeB }
type shapeB struct{ A []shapeA }

type shapeInner struct{ X int }
type shapeOuter struct {
	shapeInner
	When time.Time
	Raw  json.RawMessage
}

// The canonical descriptions are pinned: a change here changes the
// signature of every stored job of such a type, so it must be deliberate.
func TestDescribeShapeGolden(t *testing.T) {
	_ = shapeNode{}.hidden
	for _, c := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[int](), "int"},
		{reflect.TypeFor[[]*[3]map[string]uint8](), "[]*[3]map[string]uint8"},
		{reflect.TypeFor[any](), "interface"},
		{reflect.TypeFor[shapeNode](), `struct{"Children" json="children" []@0;"Index" map[string]*@0;"Next" json="next,omitempty" *@0;"Value" json="value" int;}`},
		{reflect.TypeFor[shapeA](), `struct{"B" *struct{"A" []@0;};}`},
		{reflect.TypeFor[shapeOuter](), `struct{"Raw" custom(encoding/json.RawMessage);"When" custom(time.Time);"shapeInner" embedded struct{"X" int;};}`},
	} {
		if got := describeShape(c.typ); got != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.typ, got, c.want)
		}
	}
}

func TestShapeSignatureGolden(t *testing.T) {
	// The first 8 bytes of SHA-256 of the descriptions above, pinned so
	// that a later release computes the same signatures as this one.
	for typ, want := range map[reflect.Type]string{
		reflect.TypeFor[int]():       "shape:6da88c34ba124c41",
		reflect.TypeFor[shapeNode](): "shape:6712e6835138074f",
	} {
		if got := shapeSignature(typ); got != want {
			t.Errorf("%v: got %s, want %s", typ, got, want)
		}
	}
}
