import os

# TensorFlow's start-up logging would otherwise reach every test's output and notebook kernel.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
