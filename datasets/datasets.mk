# datasets/: the Prometheus exposition's protobuf classes, generated from the vendored
# schema (datasets/metrics.proto) by the protoc of grpcio-tools, pinned in pyproject.toml
# beside the protobuf runtime it matches. Not checked in: the .proto is the source.

datasets/metrics_pb2.py: datasets/metrics.proto $(VENV)/.installed
	$(PY) -m grpc_tools.protoc -Idatasets --python_out=datasets $<

ALL_TARGETS += datasets/metrics_pb2.py
