cluster_name = "x"
