//go:build e2e

package e2e

import (
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

func protojsonMarshal(m proto.Message) ([]byte, error) { return protojson.Marshal(m) }
