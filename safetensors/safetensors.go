package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// DType is a tensor element type.
type DType string

// Element types corl reads; it writes F32.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	F64  DType = "F64"
)

// Size is the element size in bytes, 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F32:
		return 4
	case F16, BF16:
		return 2
	case F64:
		return 8
	}
	return 0
}

// maxHeader bounds the JSON header (the reference implementation uses 100 MB).
const maxHeader = 100 << 20

// Info describes one tensor.
type Info struct {
	Name  string
	DType DType
	Shape []int
	begin int // byte offsets in the data section
	end   int
}

// Elements is the number of elements.
func (i Info) Elements() int {
	n := 1
	for _, d := range i.Shape {
		n *= d
	}
	return n
}

// File is a parsed safetensors file held in memory.
type File struct {
	Metadata map[string]string
	infos    map[string]Info
	data     []byte
}

type headerEntry struct {
	DType       DType   `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// ReadFile parses the safetensors file at path.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse validates and indexes a safetensors file held in data (not copied).
func Parse(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("truncated: %d bytes, need at least the 8-byte header length", len(data))
	}
	hlen := binary.LittleEndian.Uint64(data[:8])
	if hlen > maxHeader {
		return nil, fmt.Errorf("header length %d exceeds the %d-byte limit", hlen, maxHeader)
	}
	if hlen > uint64(len(data)-8) {
		return nil, fmt.Errorf("truncated: header says %d bytes, file has %d after the length", hlen, len(data)-8)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+hlen], &raw); err != nil {
		return nil, fmt.Errorf("header is not a JSON object: %w", err)
	}
	body := data[8+hlen:]
	f := &File{infos: map[string]Info{}, data: body}
	var infos []Info
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("__metadata__: want an object of strings: %w", err)
			}
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		info, err := checkEntry(name, e, len(body))
		if err != nil {
			return nil, err
		}
		f.infos[name] = info
		infos = append(infos, info)
	}
	// No overlaps and no holes: sorted by start, each tensor begins where the
	// previous one ended, and the last ends at the end of the data.
	sort.Slice(infos, func(i, j int) bool {
		if infos[i].begin != infos[j].begin {
			return infos[i].begin < infos[j].begin
		}
		return infos[i].Name < infos[j].Name
	})
	at := 0
	for _, in := range infos {
		if in.begin < at {
			return nil, fmt.Errorf("tensor %q: bytes [%d, %d) overlap the previous tensor (which ends at %d)", in.Name, in.begin, in.end, at)
		}
		if in.begin > at {
			return nil, fmt.Errorf("tensor %q: hole in the data before byte %d (previous tensor ends at %d)", in.Name, in.begin, at)
		}
		at = in.end
	}
	if at != len(body) {
		return nil, fmt.Errorf("data section has %d bytes, tensors cover %d", len(body), at)
	}
	return f, nil
}

func checkEntry(name string, e headerEntry, dataLen int) (Info, error) {
	size := e.DType.Size()
	if size == 0 {
		return Info{}, fmt.Errorf("tensor %q: dtype %q is not supported (F32, F16, BF16, F64)", name, e.DType)
	}
	if len(e.DataOffsets) != 2 {
		return Info{}, fmt.Errorf("tensor %q: data_offsets needs 2 values, has %d", name, len(e.DataOffsets))
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin < 0 || end < begin || end > int64(dataLen) {
		return Info{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] outside the %d data bytes", name, begin, end, dataLen)
	}
	n := int64(1)
	shape := make([]int, len(e.Shape))
	for i, d := range e.Shape {
		if d < 0 {
			return Info{}, fmt.Errorf("tensor %q: negative dimension %d", name, d)
		}
		if d > 0 && n > math.MaxInt32/d {
			return Info{}, fmt.Errorf("tensor %q: shape %v is too large", name, e.Shape)
		}
		n *= d
		shape[i] = int(d)
	}
	if n*int64(size) != end-begin {
		return Info{}, fmt.Errorf("tensor %q: shape %v of %s needs %d bytes, data_offsets give %d", name, e.Shape, e.DType, n*int64(size), end-begin)
	}
	return Info{Name: name, DType: e.DType, Shape: shape, begin: int(begin), end: int(end)}, nil
}

// Infos lists the tensors sorted by name.
func (f *File) Infos() []Info {
	out := make([]Info, 0, len(f.infos))
	for _, in := range f.infos {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Info returns one tensor's description.
func (f *File) Info(name string) (Info, bool) {
	in, ok := f.infos[name]
	return in, ok
}

// Float32 returns the named tensor converted to float32.
func (f *File) Float32(name string) ([]float32, error) {
	in, ok := f.infos[name]
	if !ok {
		return nil, fmt.Errorf("no tensor %q", name)
	}
	b := f.data[in.begin:in.end]
	out := make([]float32, in.Elements())
	switch in.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
	case F16:
		for i := range out {
			out[i] = halfToFloat(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case F64:
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		}
	}
	return out, nil
}

func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := int32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// subnormal: value = mant * 2^-24
		v := float32(mant) * float32(math.Pow(2, -24))
		if sign != 0 {
			v = -v
		}
		return v
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | mant<<13)
}

// Tensor is a float32 tensor to write.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// Write writes tensors (F32, sorted by name, contiguous) with metadata.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	ts := append([]Tensor(nil), tensors...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	off := int64(0)
	for i, t := range ts {
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		if n != len(t.Data) {
			return fmt.Errorf("safetensors: tensor %q: shape %v holds %d values, data has %d", t.Name, t.Shape, n, len(t.Data))
		}
		if i > 0 && ts[i-1].Name == t.Name {
			return fmt.Errorf("safetensors: tensor %q written twice", t.Name)
		}
		shape := make([]int64, len(t.Shape))
		for j, d := range t.Shape {
			shape[j] = int64(d)
		}
		header[t.Name] = headerEntry{DType: F32, Shape: shape, DataOffsets: []int64{off, off + int64(4*n)}}
		off += int64(4 * n)
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(hj)%8 != 0 { // pad with spaces so the data is 8-byte aligned
		hj = append(hj, ' ')
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hj)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(hj); err != nil {
		return err
	}
	buf := make([]byte, 0, 1<<16)
	for _, t := range ts {
		for _, v := range t.Data {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			if len(buf) >= 1<<16 {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
	}
	_, err = w.Write(buf)
	return err
}
