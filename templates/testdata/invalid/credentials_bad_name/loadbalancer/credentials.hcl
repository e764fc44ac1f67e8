env = ["HCLOUD_TOKEN", "TF_VAR_token"]
