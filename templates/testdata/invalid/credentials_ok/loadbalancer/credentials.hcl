# The credentials this module takes (credentials.hcl).
env = ["API_TOKEN"]
