package tracing

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// The exporter's wire helpers write what protobuf's own protowire writes.
func TestWireMatchesProtowire(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 300, 1 << 32, math.MaxUint64} {
		if got, want := wireVarint(nil, v), protowire.AppendVarint(nil, v); !bytes.Equal(got, want) {
			t.Errorf("wireVarint(%d) = %x, want %x", v, got, want)
		}
		if got, want := wireFixed64(nil, v), protowire.AppendFixed64(nil, v); !bytes.Equal(got, want) {
			t.Errorf("wireFixed64(%d) = %x, want %x", v, got, want)
		}
		if got, want := wireFixed32(nil, uint32(v)), protowire.AppendFixed32(nil, uint32(v)); !bytes.Equal(got, want) {
			t.Errorf("wireFixed32(%d) = %x, want %x", uint32(v), got, want)
		}
	}
	for _, tt := range []struct {
		num wireNumber
		typ wireType
	}{{1, varintType}, {2, fixed64Type}, {15, bytesType}, {16, fixed32Type}, {1 << 20, bytesType}} {
		got := wireTag(nil, tt.num, tt.typ)
		want := protowire.AppendTag(nil, protowire.Number(tt.num), protowire.Type(tt.typ))
		if !bytes.Equal(got, want) {
			t.Errorf("wireTag(%d, %d) = %x, want %x", tt.num, tt.typ, got, want)
		}
	}
	long := string(bytes.Repeat([]byte("x"), 300))
	for _, s := range []string{"", "a", long} {
		if got, want := wireString(nil, s), protowire.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("wireString(%d bytes) = %x…, want %x…", len(s), got[:2], want[:2])
		}
		if got, want := wireBytes(nil, []byte(s)), protowire.AppendBytes(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Errorf("wireBytes(%d bytes) differs from protowire", len(s))
		}
	}
	if encodeBool(true) != protowire.EncodeBool(true) || encodeBool(false) != protowire.EncodeBool(false) {
		t.Error("encodeBool differs from protowire")
	}
}
