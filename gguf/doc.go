// Package gguf writes and reads GGUF version 3, the model file of llama.cpp
// (ggml's gguf.h): a header, typed metadata key-value pairs, tensor
// descriptions, then the tensors' bytes, each aligned. corl writes its models
// in it so that llama.cpp runs the very weights corl does (make
// bench-llamacpp); the reader exists to test the writer and to check a file
// before handing it to another engine. Only float32 tensors are written or
// read. The format is small and fixed; a dependency for it would be larger
// than the code.
package gguf
