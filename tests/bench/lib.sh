# Helpers shared by the bench scripts (sourced, not run).

# free_port: a TCP port free on 127.0.0.1 now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# gen_model N NAME DIR: DIR/NAME.onnx, a chain of N Relu layers on a [1,8]
# float tensor (3 jobs per layer on 3 executors), encoded with protoc from
# Debian's onnx.proto.
gen_model() {
  local n=$1 name=$2 dir=$3 i
  {
    echo 'ir_version: 8'
    echo 'opset_import { domain: "" version: 13 }'
    echo "graph {"
    echo "  name: \"$name\""
    for ((i = 0; i < n; i++)); do
      echo "  node { op_type: \"Relu\" input: \"t$i\" output: \"t$((i + 1))\" name: \"relu$i\" }"
    done
    echo '  input { name: "t0" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1 } dim { dim_value: 8 } } } } }'
    echo "  output { name: \"t$n\" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1 } dim { dim_value: 8 } } } } }"
    echo "}"
  } | protoc --encode=onnx.ModelProto -I/usr/include /usr/include/onnx/onnx.proto >"$dir/$name.onnx"
}

now() { date +%s.%N; }
