package tracing

import "encoding/binary"

// The protobuf wire format, as far as the OTLP exporter writes it (see protobuf's encoding
// docs: tags are field<<3|type, varints base 128, fixed types little-endian, bytes
// length-prefixed). google.golang.org/protobuf's protowire would do the same, but linking it
// runs the module's detrand init, which opens and reads the running binary at every start.

type wireNumber int32

type wireType uint8

const (
	varintType  wireType = 0
	fixed64Type wireType = 1
	bytesType   wireType = 2
	fixed32Type wireType = 5
)

func wireTag(b []byte, num wireNumber, typ wireType) []byte {
	return wireVarint(b, uint64(num)<<3|uint64(typ))
}

func wireVarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func wireFixed32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

func wireFixed64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

func wireBytes(b []byte, v []byte) []byte {
	return append(wireVarint(b, uint64(len(v))), v...)
}

func wireString(b []byte, v string) []byte {
	return append(wireVarint(b, uint64(len(v))), v...)
}

func encodeBool(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}
