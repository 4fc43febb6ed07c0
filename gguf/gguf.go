package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Magic and Version head every file this package writes.
const (
	Magic   = "GGUF"
	Version = 3
	// Alignment is the default data alignment (general.alignment absent).
	Alignment = 32
)

// Value types of metadata, as gguf.h numbers them.
const (
	typeUint8 uint32 = iota
	typeInt8
	typeUint16
	typeInt16
	typeUint32
	typeInt32
	typeFloat32
	typeBool
	typeString
	typeArray
	typeUint64
	typeInt64
	typeFloat64
)

// tensorF32 is ggml's GGML_TYPE_F32.
const tensorF32 uint32 = 0

// KV is one metadata pair. Value is a string, uint32, int32, uint64, float32,
// bool, []string, []int32 or []float32.
type KV struct {
	Key   string
	Value any
}

// Tensor is one float32 tensor. Dims are ggml's ne, innermost first: a
// row-major (rows, cols) matrix has Dims {cols, rows}. Its values are Data,
// or, when Load is set, what Load returns when Write reaches the tensor (so
// a model of gigabytes is written one tensor at a time).
type Tensor struct {
	Name string
	Dims []uint64
	Data []float32
	Load func() ([]float32, error)
}

func (t Tensor) elems() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Write writes a GGUF file: kvs in order, then tensors in order, their data
// aligned to Alignment bytes.
func Write(w io.Writer, kvs []KV, tensors []Tensor) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	e := &encoder{w: bw}
	e.raw([]byte(Magic))
	e.u32(Version)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		if err := e.value(kv.Value); err != nil {
			return fmt.Errorf("gguf: %s: %w", kv.Key, err)
		}
	}
	var off uint64
	for _, t := range tensors {
		if len(t.Dims) == 0 || t.Load == nil && t.elems() != uint64(len(t.Data)) {
			return fmt.Errorf("gguf: tensor %s: dims %v hold %d values, data has %d", t.Name, t.Dims, t.elems(), len(t.Data))
		}
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(tensorF32)
		e.u64(off)
		off = align(off + 4*t.elems())
	}
	e.pad()
	for _, t := range tensors {
		data := t.Data
		if t.Load != nil {
			var err error
			if data, err = t.Load(); err != nil {
				return fmt.Errorf("gguf: tensor %s: %w", t.Name, err)
			}
			if uint64(len(data)) != t.elems() {
				return fmt.Errorf("gguf: tensor %s: dims %v hold %d values, Load gave %d", t.Name, t.Dims, t.elems(), len(data))
			}
		}
		for _, v := range data {
			e.u32(math.Float32bits(v))
		}
		e.pad()
	}
	if e.err != nil {
		return fmt.Errorf("gguf: %w", e.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	return nil
}

func align(n uint64) uint64 { return (n + Alignment - 1) / Alignment * Alignment }

// encoder writes little-endian values, keeping the first error and the
// offset (for the alignment padding).
type encoder struct {
	w   io.Writer
	n   uint64
	err error
	buf [8]byte
}

func (e *encoder) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
		e.n += uint64(len(b))
	}
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.raw(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], v)
	e.raw(e.buf[:])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.raw([]byte(s))
}

func (e *encoder) pad() {
	var zero [Alignment]byte
	e.raw(zero[:align(e.n)-e.n])
}

func (e *encoder) value(v any) error {
	switch v := v.(type) {
	case string:
		e.u32(typeString)
		e.str(v)
	case uint32:
		e.u32(typeUint32)
		e.u32(v)
	case int32:
		e.u32(typeInt32)
		e.u32(uint32(v))
	case uint64:
		e.u32(typeUint64)
		e.u64(v)
	case float32:
		e.u32(typeFloat32)
		e.u32(math.Float32bits(v))
	case bool:
		e.u32(typeBool)
		b := byte(0)
		if v {
			b = 1
		}
		e.raw([]byte{b})
	case []string:
		e.u32(typeArray)
		e.u32(typeString)
		e.u64(uint64(len(v)))
		for _, s := range v {
			e.str(s)
		}
	case []int32:
		e.u32(typeArray)
		e.u32(typeInt32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(uint32(x))
		}
	case []float32:
		e.u32(typeArray)
		e.u32(typeFloat32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(math.Float32bits(x))
		}
	default:
		return fmt.Errorf("unsupported value type %T", v)
	}
	return nil
}

// File is a parsed GGUF file.
type File struct {
	KVs     []KV
	Tensors []Tensor
}

// Get returns the value of key, or nil.
func (f *File) Get(key string) any {
	for _, kv := range f.KVs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// Tensor returns the named tensor.
func (f *File) Tensor(name string) (Tensor, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// ErrFormat wraps every complaint about a malformed file.
var ErrFormat = errors.New("gguf: malformed file")

// Parse reads a whole GGUF file of float32 tensors. Every count, length and
// offset is checked against the data before use.
func Parse(data []byte) (*File, error) {
	d := &decoder{b: data}
	if string(d.take(4)) != Magic {
		return nil, fmt.Errorf("%w: no %s magic", ErrFormat, Magic)
	}
	if v := d.u32(); d.err == nil && v != Version {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrFormat, v, Version)
	}
	nt, nkv := d.u64(), d.u64()
	f := &File{}
	for i := uint64(0); i < nkv && d.err == nil; i++ {
		k := d.str()
		f.KVs = append(f.KVs, KV{Key: k, Value: d.value(d.u32())})
	}
	offs := make([]uint64, 0, min(nt, 1<<16))
	for i := uint64(0); i < nt && d.err == nil; i++ {
		t := Tensor{Name: d.str()}
		nd := d.u32()
		if nd == 0 || nd > 4 {
			d.fail("tensor %s: %d dims", t.Name, nd)
		}
		for j := uint32(0); j < nd && d.err == nil; j++ {
			t.Dims = append(t.Dims, d.u64())
		}
		if typ := d.u32(); d.err == nil && typ != tensorF32 {
			d.fail("tensor %s: type %d, only F32 (0) is read", t.Name, typ)
		}
		offs = append(offs, d.u64())
		f.Tensors = append(f.Tensors, t)
	}
	if d.err != nil {
		return nil, d.err
	}
	base := align(uint64(d.off))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		n := uint64(1)
		for _, dim := range t.Dims {
			if dim != 0 && n > math.MaxUint64/8/dim {
				return nil, fmt.Errorf("%w: tensor %s: dims %v overflow", ErrFormat, t.Name, t.Dims)
			}
			n *= dim
		}
		start := base + offs[i]
		if offs[i]%Alignment != 0 || start < base || start > uint64(len(data)) || 4*n > uint64(len(data))-start {
			return nil, fmt.Errorf("%w: tensor %s: %d bytes at offset %d lie outside the file's %d", ErrFormat, t.Name, 4*n, offs[i], len(data))
		}
		t.Data = make([]float32, n)
		for j := range t.Data {
			t.Data[j] = math.Float32frombits(binary.LittleEndian.Uint32(data[start+4*uint64(j):]))
		}
	}
	return f, nil
}

type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w at byte %d: %s", ErrFormat, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) take(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail("%d bytes wanted, %d left", n, len(d.b)-d.off)
		return nil
	}
	s := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (d *decoder) str() string { return string(d.take(d.u64())) }

// count reads an array length, refusing one the remaining bytes cannot hold
// at size bytes an element.
func (d *decoder) count(size uint64) uint64 {
	n := d.u64()
	if d.err == nil && n > uint64(len(d.b)-d.off)/size {
		d.fail("array of %d elements in %d bytes", n, len(d.b)-d.off)
		return 0
	}
	return n
}

func (d *decoder) value(typ uint32) any {
	switch typ {
	case typeString:
		return d.str()
	case typeUint32:
		return d.u32()
	case typeInt32:
		return int32(d.u32())
	case typeUint64:
		return d.u64()
	case typeFloat32:
		return math.Float32frombits(d.u32())
	case typeBool:
		if b := d.take(1); b != nil {
			return b[0] != 0
		}
		return false
	case typeArray:
		switch et := d.u32(); et {
		case typeString:
			v := make([]string, d.count(8))
			for i := range v {
				v[i] = d.str()
			}
			return v
		case typeInt32:
			v := make([]int32, d.count(4))
			for i := range v {
				v[i] = int32(d.u32())
			}
			return v
		case typeFloat32:
			v := make([]float32, d.count(4))
			for i := range v {
				v[i] = math.Float32frombits(d.u32())
			}
			return v
		default:
			d.fail("array of type %d is not read", et)
		}
	default:
		d.fail("value type %d is not read", typ)
	}
	return nil
}
