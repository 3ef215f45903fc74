"""acquire"""
